//! A module: the functions of one `.tsr` file (or one `// -----` chunk of it).

use crate::ir::{Func, OpKind};

/// A verified module.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Module {
    /// The functions, in source order; calls refer to them by index.
    pub funcs: Vec<Func>,
}

impl Module {
    /// The function named `name` (without `@`).
    pub fn func(&self, name: &str) -> Option<&Func> {
        self.funcs.iter().find(|f| f.name == name)
    }

    /// The arithmetic operations one call of function `index` performs: each op's
    /// [`crate::dialect::OpDef::flops`], calls counted through. Ops that decompose count 0,
    /// so count on the decomposed module. Call cycles are rejected by the verifier.
    pub fn flops(&self, index: usize) -> u64 {
        let func = &self.funcs[index];
        func.ops
            .iter()
            .map(|op| match op.kind {
                OpKind::Call(callee) => self.flops(callee),
                OpKind::Dialect(def) => {
                    let types = |ids: &[crate::ir::ValueId]| {
                        ids.iter().map(|&v| &func.value(v).ty).collect::<Vec<_>>()
                    };
                    def.flops(&types(&op.operands), &types(&op.results), &op.attrs)
                }
            })
            .sum()
    }
}
