//! A module: the functions of one `.tsr` file (or one `// -----` chunk of it).

use crate::ir::Func;

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
}
