//! `array.constant`: a tensor given by a literal, written (`dense<...>`) or in a side file
//! (`external<...>`).

use tessera::dialect::{OpDef, OpSchema};
use tessera::infer::InferContext;
use tessera::mlir::bridge::lowering::ConvertToMlir;
use tessera::types::TensorType;

/// `array.constant`.
pub struct Constant;

/// A literal tensor.
pub static CONSTANT: Constant = Constant;

static SCHEMA: OpSchema = OpSchema {
    dialect: "array",
    name: "constant",
    summary: "A tensor given by a `dense<...>` literal or stored in a side file (`external<...>`).",
    description: "`%c = array.constant dense<0.5> : tensor<10xf32>` (a splat: every element the same) or `dense<[[1.0, 2.0], [3.0, 4.0]]>` (every element, nested by the shape). The result type is required and types the literal; integers are accepted in float tensors, `true`/`false` are the `i1` elements. `external<\"w.safetensors\", \"fc.weight\">` is the tensor `fc.weight` of the safetensors file `w.safetensors` in the module's folder, whose dtype and shape must be exactly the result type's: weights stay binary.",
    operands: &[],
    literal: Some("`dense<...>`: one scalar (a splat) or lists nested exactly as the result's shape; or `external<\"file\", \"key\">`: a tensor of a safetensors side file"),
    attrs: &[],
    results: 1,
    result_type_required: true,
};

impl OpDef for Constant {
    /// It only moves or converts elements.
    fn moves_storage_types(&self) -> bool {
        true
    }

    fn converter(&self) -> Option<&dyn ConvertToMlir> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &SCHEMA
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        Some(vec![ctx.written_result(0)?.clone()])
    }
}
