//! The converters: one function per ONNX op (or family), looked up by op type. Each builds
//! the op from tessera ops through [`Graph`], so every imported op is checked by the same
//! shape rules as text. Most take and give tensors ([`SUPPORTED`]); those whose values may be
//! sequences or optionals, or that have bodies, take and give any [`Item`] ([`STRUCTURED`]).

mod activation;
mod attention;
mod causal_conv;
pub mod control_flow;
mod crop;
mod cumulative;
mod dropout;
mod elementwise;
mod linear;
mod loss;
mod nn;
mod norm;
mod number;
mod one_hot;
mod optional;
mod quant;
mod rearrange;
mod recurrent;
mod reduce;
mod resize;
mod rotary;
mod scatter;
mod sequence;
mod shape;
mod top_k;

use crate::graph::{invalid, Graph, NodeResult, Val};
use crate::item::Item;
use crate::node::Node;
use crate::nodes::{Failure, NodeConverter, Scope};

/// A node's inputs, in order; `None` for absent optional ones.
pub type Inputs = [Option<Val>];

/// Converts one node: its outputs, in order.
pub type Convert = fn(&mut Graph, &Node, &Inputs) -> NodeResult<Vec<Val>>;

/// A node's inputs of any kind, in order; `None` for absent optional ones.
pub type Items = [Option<Item>];

/// Converts one node whose values may be sequences or optionals, or whose bodies (converted
/// seeing `scope`) make its outputs.
pub type ConvertItems = fn(&mut NodeConverter, &Node, &Items, &Scope) -> Result<Vec<Item>, Failure>;

/// The most bytes one `Constant` or `ConstantOfShape` may take.
pub const CONSTANT_LIMIT: u64 = 1 << 31;

/// Input `index`, which the op requires.
pub fn input(inputs: &Inputs, index: usize) -> NodeResult<Val> {
    match inputs.get(index) {
        Some(Some(v)) => Ok(v.clone()),
        _ => invalid(format!("input #{index} is required")),
    }
}

/// Input `index` of any kind, which the op requires.
pub fn item(inputs: &Items, index: usize) -> NodeResult<Item> {
    match inputs.get(index) {
        Some(Some(v)) => Ok(v.clone()),
        _ => invalid(format!("input #{index} is required")),
    }
}

/// Input `index`, which the op requires, a tensor.
pub fn tensor_item(inputs: &Items, index: usize) -> NodeResult<Val> {
    item(inputs, index)?.tensor(&format!("input #{index}"))
}

/// Axis `axis` (negative counts from the end) of a rank-`rank` tensor, checked.
pub fn axis_in(axis: i64, rank: usize) -> NodeResult<usize> {
    let r = rank as i64;
    if axis < -r || axis >= r {
        return invalid(format!("axis {axis} is out of range for rank {rank}"));
    }
    Ok(if axis < 0 { axis + r } else { axis } as usize)
}

/// The converter of ONNX op `op_type` (default domain), if tessera imports it.
pub fn converter(op_type: &str) -> Option<Convert> {
    SUPPORTED
        .iter()
        .find(|(name, _)| *name == op_type)
        .map(|(_, convert)| *convert)
}

/// The converter of ONNX op `op_type` (default domain) among [`STRUCTURED`], if it is one.
pub fn structured(op_type: &str) -> Option<ConvertItems> {
    STRUCTURED
        .iter()
        .find(|(name, _)| *name == op_type)
        .map(|(_, convert)| *convert)
}

/// Every op type the importer imports, in alphabetical order: those of [`SUPPORTED`] and of
/// [`STRUCTURED`].
pub fn op_types() -> Vec<&'static str> {
    let mut types: Vec<&'static str> = SUPPORTED
        .iter()
        .map(|(name, _)| *name)
        .chain(STRUCTURED.iter().map(|(name, _)| *name))
        .collect();
    types.sort_unstable();
    types
}

/// The op types whose values may be sequences or optionals, or that have bodies, with their
/// converters.
pub static STRUCTURED: &[(&str, ConvertItems)] = &[
    ("ConcatFromSequence", sequence::concat_from_sequence),
    ("Constant", shape::constant_item),
    ("Identity", optional::identity),
    ("If", control_flow::if_),
    ("Loop", control_flow::loop_),
    ("Optional", optional::optional),
    ("OptionalGetElement", optional::get_element),
    ("OptionalHasElement", optional::has_element),
    ("Scan", control_flow::scan),
    ("SequenceAt", sequence::at),
    ("SequenceConstruct", sequence::construct),
    ("SequenceEmpty", sequence::empty),
    ("SequenceErase", sequence::erase),
    ("SequenceInsert", sequence::insert),
    ("SequenceLength", sequence::length),
    ("SequenceMap", sequence::map),
    ("SplitToSequence", sequence::split_to_sequence),
];

/// Every op type the importer converts node by node, with its converter.
pub static SUPPORTED: &[(&str, Convert)] = &[
    ("Abs", elementwise::unary),
    ("Acos", elementwise::unary),
    ("Acosh", elementwise::unary),
    ("Add", elementwise::arithmetic),
    ("And", elementwise::logic),
    ("ArgMax", reduce::argmax),
    ("ArgMin", reduce::argmax),
    ("Asin", elementwise::unary),
    ("Asinh", elementwise::unary),
    ("Atan", elementwise::unary),
    ("Atanh", elementwise::unary),
    ("Attention", attention::attention),
    ("AveragePool", nn::pool),
    ("BatchNormalization", nn::batch_norm),
    ("BitShift", elementwise::bit_shift),
    ("BitwiseAnd", elementwise::logic),
    ("BitwiseNot", elementwise::logic),
    ("BitwiseOr", elementwise::logic),
    ("BitwiseXor", elementwise::logic),
    ("Cast", elementwise::cast),
    ("CastLike", elementwise::cast),
    ("CausalConvWithState", causal_conv::causal_conv_with_state),
    ("Ceil", elementwise::unary),
    ("Celu", activation::activation),
    ("CenterCropPad", crop::center_crop_pad),
    ("Clip", elementwise::clip),
    ("Concat", shape::concat),
    ("ConstantOfShape", shape::constant_of_shape),
    ("Conv", nn::conv),
    ("ConvTranspose", nn::conv_transpose),
    ("Cos", elementwise::unary),
    ("Cosh", elementwise::unary),
    ("CumProd", cumulative::cumulative),
    ("CumSum", cumulative::cumulative),
    ("DepthToSpace", rearrange::rearrange),
    ("DequantizeLinear", quant::dequantize_linear),
    ("Div", elementwise::arithmetic),
    ("Dropout", dropout::dropout),
    ("DynamicQuantizeLinear", quant::dynamic_quantize_linear),
    ("Einsum", linear::einsum),
    ("Elu", elementwise::leaky),
    ("Equal", elementwise::comparison),
    ("Erf", elementwise::unary),
    ("Exp", elementwise::unary),
    ("Expand", shape::expand),
    ("EyeLike", one_hot::eye_like),
    ("Flatten", shape::flatten),
    ("Floor", elementwise::unary),
    ("GRU", recurrent::recurrent),
    ("Gather", shape::gather),
    ("GatherElements", shape::gather_elements),
    ("GatherND", scatter::gather_nd),
    ("Gelu", elementwise::gelu),
    ("Gemm", linear::gemm),
    ("GlobalAveragePool", nn::global_pool),
    ("GlobalMaxPool", nn::global_pool),
    ("Greater", elementwise::comparison),
    ("GreaterOrEqual", elementwise::comparison),
    ("GroupNormalization", norm::group_norm),
    ("HardSigmoid", elementwise::hard),
    ("HardSwish", elementwise::hard),
    ("Hardmax", one_hot::hardmax),
    ("InstanceNormalization", nn::instance_norm),
    ("IsInf", number::number),
    ("IsNaN", number::number),
    ("LRN", nn::lrn),
    ("LSTM", recurrent::recurrent),
    ("LayerNormalization", nn::layer_norm),
    ("LeakyRelu", elementwise::leaky),
    ("Less", elementwise::comparison),
    ("LessOrEqual", elementwise::comparison),
    ("Log", elementwise::unary),
    ("LogSoftmax", elementwise::softmax),
    ("LpNormalization", norm::lp_norm),
    ("LpPool", nn::lp_pool),
    ("MatMul", linear::matmul),
    ("Max", elementwise::variadic),
    ("MaxPool", nn::pool),
    ("Mean", elementwise::variadic),
    ("MeanVarianceNormalization", norm::mean_variance_norm),
    ("Min", elementwise::variadic),
    ("Mish", activation::activation),
    ("Mod", elementwise::modulo),
    ("Mul", elementwise::arithmetic),
    ("Neg", elementwise::unary),
    ("NegativeLogLikelihoodLoss", loss::negative_log_likelihood),
    ("Not", elementwise::logic),
    ("OneHot", one_hot::one_hot),
    ("Or", elementwise::logic),
    ("PRelu", activation::activation),
    ("Pad", shape::pad),
    ("Pow", elementwise::pow),
    ("QLinearMatMul", quant::qlinear_matmul),
    ("QuantizeLinear", quant::quantize_linear),
    ("RMSNormalization", norm::rms_norm),
    ("RNN", recurrent::recurrent),
    ("Range", shape::range),
    ("Reciprocal", elementwise::unary),
    ("ReduceL1", reduce::reduce),
    ("ReduceL2", reduce::reduce),
    ("ReduceLogSum", reduce::reduce),
    ("ReduceLogSumExp", reduce::reduce),
    ("ReduceMax", reduce::reduce),
    ("ReduceMean", reduce::reduce),
    ("ReduceMin", reduce::reduce),
    ("ReduceProd", reduce::reduce),
    ("ReduceSum", reduce::reduce),
    ("ReduceSumSquare", reduce::reduce),
    ("Relu", elementwise::unary),
    ("Reshape", shape::reshape),
    ("Resize", resize::resize),
    ("RotaryEmbedding", rotary::rotary_embedding),
    ("Round", number::number),
    ("Scatter", scatter::scatter_elements),
    ("ScatterElements", scatter::scatter_elements),
    ("ScatterND", scatter::scatter_nd),
    ("Selu", activation::activation),
    ("Shape", shape::shape),
    ("Shrink", activation::activation),
    ("Sigmoid", elementwise::unary),
    ("Sign", number::number),
    ("Sin", elementwise::unary),
    ("Sinh", elementwise::unary),
    ("Size", shape::size),
    ("Slice", shape::slice),
    ("Softmax", elementwise::softmax),
    ("SoftmaxCrossEntropyLoss", loss::softmax_cross_entropy),
    ("Softplus", activation::activation),
    ("Softsign", activation::activation),
    ("SpaceToDepth", rearrange::rearrange),
    ("Split", shape::split),
    ("Sqrt", elementwise::unary),
    ("Squeeze", shape::squeeze),
    ("Sub", elementwise::arithmetic),
    ("Sum", elementwise::variadic),
    ("SwiGLU", activation::swiglu),
    ("Swish", activation::activation),
    ("Tan", elementwise::unary),
    ("Tanh", elementwise::unary),
    ("TensorScatter", scatter::tensor_scatter),
    ("ThresholdedRelu", activation::activation),
    ("Tile", shape::tile),
    ("TopK", top_k::top_k),
    ("Transpose", shape::transpose),
    ("Trilu", shape::trilu),
    ("Unsqueeze", shape::unsqueeze),
    ("Where", elementwise::where_),
    ("Xor", elementwise::logic),
];
