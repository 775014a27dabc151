//! The `nn` dialect: layers as users know them from Keras and PyTorch (dense, activations,
//! normalization, convolution, pooling, attention), each declared once with its schema,
//! semantics and shape rule.

mod activation;
mod attention;
mod conv;
mod convert;
mod decompose;
mod dense;
mod eval;
mod norm;
mod pool;
pub mod window;

use tessera::dialect::{Dialect, OpDef};

/// The `nn` dialect.
pub struct NnDialect;

/// The dialect instance to register.
pub static NN: NnDialect = NnDialect;

static OPS: &[&dyn OpDef] = &[
    &dense::DENSE,
    &activation::RELU,
    &activation::GELU,
    &activation::SIGMOID,
    &activation::SILU,
    &activation::SOFTMAX,
    &activation::LOG_SOFTMAX,
    &norm::LAYER_NORM,
    &norm::BATCH_NORM,
    &conv::CONV2D,
    &conv::GROUP_CONV2D,
    &pool::MAX_POOL2D,
    &pool::AVG_POOL2D,
    &attention::ATTENTION,
];

impl Dialect for NnDialect {
    fn name(&self) -> &'static str {
        "nn"
    }

    fn summary(&self) -> &'static str {
        "Neural-network layers as users know them from Keras and PyTorch; each either \
         decomposes into `array` ops or converts straight to linalg where that is better."
    }

    fn ops(&self) -> &'static [&'static dyn OpDef] {
        OPS
    }
}

/// The one-operand list of elementwise layers.
const X: &[tessera::dialect::OperandSpec] = &[tessera::dialect::OperandSpec {
    name: "x",
    arity: tessera::dialect::Arity::One,
    doc: "any shape, float",
}];
