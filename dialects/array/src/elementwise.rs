//! Elementwise ops: unary math, binary arithmetic with numpy broadcasting, comparison,
//! selection and element type conversion.

use tessera::dialect::Attrs;
use tessera::dialect::{
    Arity, AttrDefault, AttrKind, AttrSpec, OpDef, OpSchema, OperandSpec, TransposeRule,
};
use tessera::infer::InferContext;
use tessera::mlir::bridge::lowering::ConvertToMlir;
use tessera::types::{ElementClass, ElementType, TensorType};

/// The element types an elementwise op accepts; picks both the check and the documentation.
#[derive(Clone, Copy)]
enum Elements {
    Float,
    Numeric,
    /// Integers and `i1`: bitwise logic.
    Bits,
    /// Integers: shifts.
    Integer,
}

impl Elements {
    const fn classes(self) -> &'static [ElementClass] {
        match self {
            Elements::Float => &[ElementClass::Float],
            Elements::Numeric => &[ElementClass::Float, ElementClass::Int],
            Elements::Bits => &[ElementClass::Int, ElementClass::Bool],
            Elements::Integer => &[ElementClass::Int],
        }
    }

    const fn unary_operands(self) -> &'static [OperandSpec] {
        match self {
            Elements::Float => &[OperandSpec {
                name: "x",
                arity: Arity::One,
                doc: "any shape; float",
            }],
            Elements::Numeric | Elements::Bits | Elements::Integer => &[OperandSpec {
                name: "x",
                arity: Arity::One,
                doc: "any shape; float or integer",
            }],
        }
    }

    const fn binary_operands(self) -> &'static [OperandSpec] {
        match self {
            Elements::Float => &[
                OperandSpec {
                    name: "lhs",
                    arity: Arity::One,
                    doc: "any shape; float",
                },
                OperandSpec {
                    name: "rhs",
                    arity: Arity::One,
                    doc: "broadcast-compatible with `lhs`; the same element type",
                },
            ],
            Elements::Numeric => &[
                OperandSpec {
                    name: "lhs",
                    arity: Arity::One,
                    doc: "any shape; float or integer",
                },
                OperandSpec {
                    name: "rhs",
                    arity: Arity::One,
                    doc: "broadcast-compatible with `lhs`; the same element type",
                },
            ],
            Elements::Bits => &[
                OperandSpec {
                    name: "lhs",
                    arity: Arity::One,
                    doc: "any shape; integer or `i1`",
                },
                OperandSpec {
                    name: "rhs",
                    arity: Arity::One,
                    doc: "broadcast-compatible with `lhs`; the same element type",
                },
            ],
            Elements::Integer => &[
                OperandSpec {
                    name: "lhs",
                    arity: Arity::One,
                    doc: "any shape; integer",
                },
                OperandSpec {
                    name: "rhs",
                    arity: Arity::One,
                    doc:
                        "the shift amounts: broadcast-compatible with `lhs`; the same element type",
                },
            ],
        }
    }
}

use Elements::{Bits as BITS, Float as FLOAT, Integer as INTEGER, Numeric as NUMERIC};

const X: &[OperandSpec] = &[OperandSpec {
    name: "x",
    arity: Arity::One,
    doc: "any shape",
}];

const LHS_RHS: &[OperandSpec] = &[
    OperandSpec {
        name: "lhs",
        arity: Arity::One,
        doc: "any shape",
    },
    OperandSpec {
        name: "rhs",
        arity: Arity::One,
        doc: "broadcast-compatible with `lhs`; the same element type",
    },
];

/// The ops of the `Unary` family, so that evaluation and conversion match on a type, not
/// on names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryKind {
    /// `neg`.
    Neg,
    /// `abs`.
    Abs,
    /// `exp`.
    Exp,
    /// `log`.
    Log,
    /// `sqrt`.
    Sqrt,
    /// `rsqrt`.
    Rsqrt,
    /// `tanh`.
    Tanh,
    /// `erf`.
    Erf,
    /// `floor`.
    Floor,
    /// `ceil`.
    Ceil,
    /// `sin`.
    Sin,
    /// `cos`.
    Cos,
    /// `tan`.
    Tan,
    /// `asin`.
    Asin,
    /// `acos`.
    Acos,
    /// `atan`.
    Atan,
    /// `sinh`.
    Sinh,
    /// `cosh`.
    Cosh,
    /// `asinh`.
    Asinh,
    /// `acosh`.
    Acosh,
    /// `atanh`.
    Atanh,
}

/// A unary elementwise op: the result has the operand's type.
pub struct Unary {
    /// Which op of the family this is.
    pub kind: UnaryKind,
    schema: OpSchema,
    classes: &'static [ElementClass],
}

const fn unary(
    kind: UnaryKind,
    name: &'static str,
    summary: &'static str,
    description: &'static str,
    elements: Elements,
) -> Unary {
    Unary {
        kind,
        schema: OpSchema {
            dialect: "array",
            name,
            summary,
            description,
            operands: elements.unary_operands(),
            literal: None,
            attrs: &[],
            results: 1,
            result_type_required: false,
        },
        classes: elements.classes(),
    }
}

impl OpDef for Unary {
    fn transpose_rule(&self) -> TransposeRule {
        TransposeRule::Elementwise
    }

    fn flops(&self, _: &[&TensorType], results: &[&TensorType], _: &Attrs) -> u64 {
        results[0].num_elements().unwrap_or(0)
    }

    fn converter(&self) -> Option<&dyn ConvertToMlir> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &self.schema
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        ctx.require_class(0, self.classes)?;
        Some(vec![ctx.operand(0).clone()])
    }
}

/// `-x`.
pub static NEG: Unary = unary(
    UnaryKind::Neg,
    "neg",
    "Negation, elementwise.",
    "`y = -x`. Integers wrap on overflow (`-(-128)` is `-128` in i8).",
    NUMERIC,
);
/// `|x|`.
pub static ABS: Unary = unary(
    UnaryKind::Abs,
    "abs",
    "Absolute value, elementwise.",
    "`y = |x|`. Integers wrap on overflow (`|-128|` is `-128` in i8).",
    NUMERIC,
);
/// `e^x`.
pub static EXP: Unary = unary(
    UnaryKind::Exp,
    "exp",
    "Natural exponential, elementwise.",
    "`y = e^x`; overflows to `inf`.",
    FLOAT,
);
/// `ln x`.
pub static LOG: Unary = unary(
    UnaryKind::Log,
    "log",
    "Natural logarithm, elementwise.",
    "`y = ln(x)`; `ln(0) = -inf`, negative `x` gives NaN.",
    FLOAT,
);
/// `sqrt x`.
pub static SQRT: Unary = unary(
    UnaryKind::Sqrt,
    "sqrt",
    "Square root, elementwise.",
    "`y = sqrt(x)`; negative `x` gives NaN.",
    FLOAT,
);
/// `1 / sqrt x`.
pub static RSQRT: Unary = unary(
    UnaryKind::Rsqrt,
    "rsqrt",
    "Reciprocal square root, elementwise.",
    "`y = 1 / sqrt(x)`; `rsqrt(0) = inf`.",
    FLOAT,
);
/// `tanh x`.
pub static TANH: Unary = unary(
    UnaryKind::Tanh,
    "tanh",
    "Hyperbolic tangent, elementwise.",
    "`y = tanh(x)`, in `[-1, 1]`.",
    FLOAT,
);
/// `erf x`.
pub static ERF: Unary = unary(
    UnaryKind::Erf,
    "erf",
    "Gauss error function, elementwise.",
    "`y = erf(x) = 2/sqrt(pi) * integral from 0 to x of e^(-t^2) dt`.",
    FLOAT,
);
/// `floor x`.
pub static FLOOR: Unary = unary(
    UnaryKind::Floor,
    "floor",
    "Round toward negative infinity, elementwise.",
    "`y = floor(x)`, the largest integer value not above `x`.",
    FLOAT,
);
/// `ceil x`.
pub static CEIL: Unary = unary(
    UnaryKind::Ceil,
    "ceil",
    "Round toward positive infinity, elementwise.",
    "`y = ceil(x)`, the smallest integer value not below `x`.",
    FLOAT,
);

/// `sin x`.
pub static SIN: Unary = unary(
    UnaryKind::Sin,
    "sin",
    "Sine, elementwise.",
    "`y = sin(x)`, `x` in radians.",
    FLOAT,
);
/// `cos x`.
pub static COS: Unary = unary(
    UnaryKind::Cos,
    "cos",
    "Cosine, elementwise.",
    "`y = cos(x)`, `x` in radians.",
    FLOAT,
);
/// `tan x`.
pub static TAN: Unary = unary(
    UnaryKind::Tan,
    "tan",
    "Tangent, elementwise.",
    "`y = tan(x)`, `x` in radians.",
    FLOAT,
);
/// `asin x`.
pub static ASIN: Unary = unary(
    UnaryKind::Asin,
    "asin",
    "Arcsine, elementwise.",
    "`y = asin(x)` in `[-pi/2, pi/2]`; NaN outside `[-1, 1]`.",
    FLOAT,
);
/// `acos x`.
pub static ACOS: Unary = unary(
    UnaryKind::Acos,
    "acos",
    "Arccosine, elementwise.",
    "`y = acos(x)` in `[0, pi]`; NaN outside `[-1, 1]`.",
    FLOAT,
);
/// `atan x`.
pub static ATAN: Unary = unary(
    UnaryKind::Atan,
    "atan",
    "Arctangent, elementwise.",
    "`y = atan(x)` in `(-pi/2, pi/2)`.",
    FLOAT,
);
/// `sinh x`.
pub static SINH: Unary = unary(
    UnaryKind::Sinh,
    "sinh",
    "Hyperbolic sine, elementwise.",
    "`y = sinh(x) = (e^x - e^-x) / 2`.",
    FLOAT,
);
/// `cosh x`.
pub static COSH: Unary = unary(
    UnaryKind::Cosh,
    "cosh",
    "Hyperbolic cosine, elementwise.",
    "`y = cosh(x) = (e^x + e^-x) / 2`.",
    FLOAT,
);
/// `asinh x`.
pub static ASINH: Unary = unary(
    UnaryKind::Asinh,
    "asinh",
    "Inverse hyperbolic sine, elementwise.",
    "`y = asinh(x) = ln(x + sqrt(x^2 + 1))`.",
    FLOAT,
);
/// `acosh x`.
pub static ACOSH: Unary = unary(
    UnaryKind::Acosh,
    "acosh",
    "Inverse hyperbolic cosine, elementwise.",
    "`y = acosh(x) = ln(x + sqrt(x^2 - 1))`; NaN below 1.",
    FLOAT,
);
/// `atanh x`.
pub static ATANH: Unary = unary(
    UnaryKind::Atanh,
    "atanh",
    "Inverse hyperbolic tangent, elementwise.",
    "`y = atanh(x) = ln((1 + x) / (1 - x)) / 2`; infinite at -1 and 1, NaN outside `[-1, 1]`.",
    FLOAT,
);

/// The ops of the `Binary` family, so that evaluation and conversion match on a type, not
/// on names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryKind {
    /// `add`.
    Add,
    /// `sub`.
    Sub,
    /// `mul`.
    Mul,
    /// `div`.
    Div,
    /// `max`.
    Max,
    /// `min`.
    Min,
    /// `pow`.
    Pow,
    /// `rem`.
    Rem,
    /// `and`.
    And,
    /// `or`.
    Or,
    /// `xor`.
    Xor,
    /// `shift_left`.
    ShiftLeft,
    /// `shift_right`.
    ShiftRight,
}

/// A binary elementwise op with numpy broadcasting: the result has the broadcast shape and
/// the operands' (shared) element type.
pub struct Binary {
    /// Which op of the family this is.
    pub kind: BinaryKind,
    schema: OpSchema,
    classes: &'static [ElementClass],
}

const fn binary(
    kind: BinaryKind,
    name: &'static str,
    summary: &'static str,
    description: &'static str,
    elements: Elements,
) -> Binary {
    Binary {
        kind,
        schema: OpSchema {
            dialect: "array",
            name,
            summary,
            description,
            operands: elements.binary_operands(),
            literal: None,
            attrs: &[],
            results: 1,
            result_type_required: false,
        },
        classes: elements.classes(),
    }
}

impl OpDef for Binary {
    fn transpose_rule(&self) -> TransposeRule {
        TransposeRule::Elementwise
    }

    fn flops(&self, _: &[&TensorType], results: &[&TensorType], _: &Attrs) -> u64 {
        results[0].num_elements().unwrap_or(0)
    }

    fn converter(&self) -> Option<&dyn ConvertToMlir> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &self.schema
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        let element = ctx.same_element(&[0, 1])?;
        ctx.require_class(0, self.classes)?;
        let shape = ctx.broadcast(&[0, 1])?;
        Some(vec![TensorType::new(shape, element)])
    }
}

/// `lhs + rhs`.
pub static ADD: Binary = binary(BinaryKind::Add, "add", "Addition, elementwise, with numpy broadcasting.", "`y = lhs + rhs`. Shapes broadcast as in numpy: aligned on the right, each pair of dimensions equal or one of them 1. Integers wrap on overflow.", NUMERIC);
/// `lhs - rhs`.
pub static SUB: Binary = binary(
    BinaryKind::Sub,
    "sub",
    "Subtraction, elementwise, with numpy broadcasting.",
    "`y = lhs - rhs`, broadcasting as `array.add`. Integers wrap on overflow.",
    NUMERIC,
);
/// `lhs * rhs`.
pub static MUL: Binary = binary(
    BinaryKind::Mul,
    "mul",
    "Multiplication, elementwise, with numpy broadcasting.",
    "`y = lhs * rhs`, broadcasting as `array.add`. Integers wrap on overflow.",
    NUMERIC,
);
/// `lhs / rhs`.
pub static DIV: Binary = binary(BinaryKind::Div, "div", "Division, elementwise, with numpy broadcasting.", "`y = lhs / rhs`, broadcasting as `array.add`. Integer division rounds toward zero; an integer division by zero, or of the minimum value by -1, has an unspecified result.", NUMERIC);
/// `max(lhs, rhs)`.
pub static MAX: Binary = binary(
    BinaryKind::Max,
    "max",
    "Maximum, elementwise, with numpy broadcasting.",
    "`y = max(lhs, rhs)`, broadcasting as `array.add`. NaN propagates (as `numpy.maximum`).",
    NUMERIC,
);
/// `min(lhs, rhs)`.
pub static MIN: Binary = binary(
    BinaryKind::Min,
    "min",
    "Minimum, elementwise, with numpy broadcasting.",
    "`y = min(lhs, rhs)`, broadcasting as `array.add`. NaN propagates (as `numpy.minimum`).",
    NUMERIC,
);
/// `lhs ^ rhs`.
pub static POW: Binary = binary(BinaryKind::Pow, "pow", "Power, elementwise, with numpy broadcasting.", "`y = lhs ^ rhs` (floats only), broadcasting as `array.add`. A negative base with a non-integer exponent gives NaN.", FLOAT);

/// `lhs rem rhs`.
pub static REM: Binary = binary(BinaryKind::Rem, "rem", "Remainder of division, elementwise, with numpy broadcasting.", "`y = lhs - trunc(lhs / rhs) * rhs`: the remainder of division rounded toward zero, with the sign of `lhs` (C's `fmod` and `%`), broadcasting as `array.add`. A float remainder by zero is NaN; an integer remainder by zero has an unspecified result.", NUMERIC);

/// `lhs & rhs`.
pub static AND: Binary = binary(
    BinaryKind::And,
    "and",
    "Bitwise and, elementwise, with numpy broadcasting.",
    "`y = lhs & rhs` on the two's complement bits (on `i1`, logical and), broadcasting as `array.add`.",
    BITS,
);
/// `lhs | rhs`.
pub static OR: Binary = binary(
    BinaryKind::Or,
    "or",
    "Bitwise or, elementwise, with numpy broadcasting.",
    "`y = lhs | rhs` on the two's complement bits (on `i1`, logical or), broadcasting as `array.add`.",
    BITS,
);
/// `lhs ^ rhs`.
pub static XOR: Binary = binary(
    BinaryKind::Xor,
    "xor",
    "Bitwise exclusive or, elementwise, with numpy broadcasting.",
    "`y = lhs ^ rhs` on the two's complement bits (on `i1`, logical xor; with all ones, bitwise not), broadcasting as `array.add`.",
    BITS,
);
/// `lhs << rhs`.
pub static SHIFT_LEFT: Binary = binary(BinaryKind::ShiftLeft, "shift_left", "Left shift, elementwise, with numpy broadcasting.", "`y = lhs << rhs`, the bits shifted out dropped and zeros shifted in, broadcasting as `array.add`. The amount is read as unsigned: one of the bit width or more (a negative one included) gives 0.", INTEGER);
/// `lhs >> rhs`.
pub static SHIFT_RIGHT: Binary = binary(BinaryKind::ShiftRight, "shift_right", "Right shift, elementwise, with numpy broadcasting.", "`y = lhs >> rhs`: arithmetic (copies of the sign shifted in) for signed types, logical (zeros) for unsigned ones, broadcasting as `array.add`. The amount is read as unsigned: one of the bit width or more (a negative one included) shifts every bit out (0, or -1 for a negative signed value).", INTEGER);

/// `array.compare`: elementwise comparison to `i1`.
pub struct Compare;

/// The comparison predicates.
pub const PREDICATES: &[&str] = &["lt", "le", "gt", "ge", "eq", "ne"];

/// `lhs <predicate> rhs`.
pub static COMPARE: Compare = Compare;

static COMPARE_SCHEMA: OpSchema = OpSchema {
    dialect: "array",
    name: "compare",
    summary: "Comparison, elementwise, with numpy broadcasting; the result is `i1`.",
    description: "`y = lhs <predicate> rhs` with `predicate` one of `lt le gt ge eq ne`, broadcasting as `array.add`. Both operands have the same element type. Float comparisons are ordered (a NaN operand gives false) except `ne`, which gives true for NaN, as in numpy.",
    operands: LHS_RHS,
    literal: None,
    attrs: &[AttrSpec {
        name: "predicate",
        kind: AttrKind::Enum(PREDICATES),
        default: AttrDefault::Required,
        doc: "which comparison",
    }],
    results: 1,
    result_type_required: false,
};

impl OpDef for Compare {
    fn transpose_rule(&self) -> TransposeRule {
        TransposeRule::Elementwise
    }

    fn flops(&self, _: &[&TensorType], results: &[&TensorType], _: &Attrs) -> u64 {
        results[0].num_elements().unwrap_or(0)
    }

    fn converter(&self) -> Option<&dyn ConvertToMlir> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &COMPARE_SCHEMA
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        ctx.same_element(&[0, 1])?;
        let shape = ctx.broadcast(&[0, 1])?;
        Some(vec![TensorType::new(shape, ElementType::I1)])
    }
}

/// `array.select`: `cond ? a : b`, elementwise.
pub struct Select;

/// `cond ? a : b`.
pub static SELECT: Select = Select;

static SELECT_SCHEMA: OpSchema = OpSchema {
    dialect: "array",
    name: "select",
    summary: "Choice, elementwise: `cond ? a : b`, with numpy broadcasting.",
    description: "`y = cond ? a : b`. `cond` is `i1`; `a` and `b` share an element type, which the result has. All three broadcast together as in numpy.",
    operands: &[
        OperandSpec { name: "cond", arity: Arity::One, doc: "`i1`, broadcast-compatible" },
        OperandSpec { name: "a", arity: Arity::One, doc: "taken where `cond` is true" },
        OperandSpec { name: "b", arity: Arity::One, doc: "taken where `cond` is false" },
    ],
    literal: None,
    attrs: &[],
    results: 1,
    result_type_required: false,
};

impl OpDef for Select {
    fn transpose_rule(&self) -> TransposeRule {
        TransposeRule::Elementwise
    }

    fn flops(&self, _: &[&TensorType], results: &[&TensorType], _: &Attrs) -> u64 {
        results[0].num_elements().unwrap_or(0)
    }

    fn converter(&self) -> Option<&dyn ConvertToMlir> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &SELECT_SCHEMA
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        ctx.require_class(0, &[ElementClass::Bool])?;
        let element = ctx.same_element(&[1, 2])?;
        let shape = ctx.broadcast(&[0, 1, 2])?;
        Some(vec![TensorType::new(shape, element)])
    }
}

/// `array.cast`: element type conversion.
pub struct Cast;

/// Element type conversion.
pub static CAST: Cast = Cast;

static CAST_SCHEMA: OpSchema = OpSchema {
    dialect: "array",
    name: "cast",
    summary: "Element type conversion; the written result type gives the new element type.",
    description: "`y = T(x)` with `T` the result's element type; the shape is unchanged. Float to float rounds to nearest even. Integer to float rounds to nearest. Float to integer rounds toward zero and saturates at the type's bounds; NaN gives 0. Integer to integer sign-extends or truncates (two's complement). To `i1`: `x != 0`. From `i1`: 0 or 1.",
    operands: X,
    literal: None,
    attrs: &[],
    results: 1,
    result_type_required: true,
};

impl OpDef for Cast {
    /// It only moves or converts elements.
    fn moves_storage_types(&self) -> bool {
        true
    }

    fn transpose_rule(&self) -> TransposeRule {
        TransposeRule::Elementwise
    }

    fn flops(&self, _: &[&TensorType], results: &[&TensorType], _: &Attrs) -> u64 {
        results[0].num_elements().unwrap_or(0)
    }

    fn converter(&self) -> Option<&dyn ConvertToMlir> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &CAST_SCHEMA
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        let target = ctx.written_result(0)?.element;
        Some(vec![ctx.operand(0).with_element(target)])
    }
}
