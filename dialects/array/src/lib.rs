//! The `array` dialect: tensor algebra (elementwise math with numpy broadcasting, matmul,
//! layout changes, reductions, constants), each op declared once with its schema, semantics
//! and shape rule.

pub mod constant;
mod convert;
pub mod elementwise;
mod eval;
pub mod layout;
pub mod matmul;
pub mod reduce;
mod storage_cast;
mod transcendental;

use tessera::dialect::{Dialect, OpDef};

/// The `array` dialect.
pub struct ArrayDialect;

/// The dialect instance to register.
pub static ARRAY: ArrayDialect = ArrayDialect;

static OPS: &[&dyn OpDef] = &[
    &elementwise::NEG,
    &elementwise::ABS,
    &elementwise::EXP,
    &elementwise::LOG,
    &elementwise::SQRT,
    &elementwise::RSQRT,
    &elementwise::TANH,
    &elementwise::ERF,
    &elementwise::FLOOR,
    &elementwise::CEIL,
    &elementwise::SIN,
    &elementwise::COS,
    &elementwise::TAN,
    &elementwise::ASIN,
    &elementwise::ACOS,
    &elementwise::ATAN,
    &elementwise::SINH,
    &elementwise::COSH,
    &elementwise::ASINH,
    &elementwise::ACOSH,
    &elementwise::ATANH,
    &elementwise::ADD,
    &elementwise::SUB,
    &elementwise::MUL,
    &elementwise::DIV,
    &elementwise::MAX,
    &elementwise::MIN,
    &elementwise::POW,
    &elementwise::REM,
    &elementwise::AND,
    &elementwise::OR,
    &elementwise::XOR,
    &elementwise::SHIFT_LEFT,
    &elementwise::SHIFT_RIGHT,
    &elementwise::COMPARE,
    &elementwise::SELECT,
    &elementwise::CAST,
    &matmul::MATMUL,
    &layout::TRANSPOSE,
    &layout::RESHAPE,
    &layout::BROADCAST,
    &layout::CONCAT,
    &layout::SLICE,
    &layout::GATHER,
    &layout::TAKE_ALONG,
    &layout::PAD,
    &reduce::REDUCE_SUM,
    &reduce::REDUCE_MAX,
    &reduce::REDUCE_MIN,
    &reduce::REDUCE_MEAN,
    &reduce::REDUCE_PROD,
    &reduce::ARGMAX,
    &constant::CONSTANT,
];

impl Dialect for ArrayDialect {
    fn name(&self) -> &'static str {
        "array"
    }

    fn summary(&self) -> &'static str {
        "Tensor algebra, lowered straight to MLIR linalg/tensor: elementwise math with numpy \
         broadcasting, matmul, layout changes, reductions and constants."
    }

    fn ops(&self) -> &'static [&'static dyn OpDef] {
        OPS
    }
}
