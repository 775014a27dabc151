//! The syntax tree of a `.tsr` file: exactly what was written, with a span on every part.

use crate::source::Span;

/// A parsed module: its functions in source order.
#[derive(Clone, Debug, Default)]
pub struct AstModule {
    /// The functions.
    pub funcs: Vec<AstFunc>,
}

/// `func @name(%a: T, ...) -> R { ... }`.
#[derive(Clone, Debug)]
pub struct AstFunc {
    /// Name without `@`.
    pub name: Name,
    /// Parameters in order.
    pub params: Vec<AstParam>,
    /// Declared result types.
    pub results: Vec<AstType>,
    /// Statements of the body in order, the `return` included.
    pub body: Vec<AstStmt>,
    /// The closing brace, where a missing `return` is reported.
    pub close: Span,
    /// The whole header, `func` to `{`.
    pub span: Span,
}

/// A name (value without `%`, function without `@`) and where it was written (sigil included).
#[derive(Clone, Debug)]
pub struct Name {
    /// The name.
    pub text: String,
    /// Its place.
    pub span: Span,
}

/// `%name: tensor<...>`.
#[derive(Clone, Debug)]
pub struct AstParam {
    /// The parameter's value name.
    pub name: Name,
    /// Its type.
    pub ty: AstType,
}

/// A written tensor type: dimensions and element type kept as text until verification.
#[derive(Clone, Debug)]
pub struct AstType {
    /// Each dimension's digits and place.
    pub dims: Vec<(String, Span)>,
    /// The element type keyword (`f32`, possibly unknown such as `f8`).
    pub element: (String, Span),
    /// The whole type.
    pub span: Span,
}

/// One statement of a function body.
#[derive(Clone, Debug)]
pub enum AstStmt {
    /// `%r = dialect.op ...` or `%r = call @f(...)`.
    Op(AstOp),
    /// `return %a, %b : T, U`.
    Return(AstReturn),
}

/// `%r0, %r1 = dialect.name args {attrs} : types`, or a call.
#[derive(Clone, Debug)]
pub struct AstOp {
    /// The result names.
    pub results: Vec<Name>,
    /// What is computed.
    pub callee: AstCallee,
    /// Positional arguments: values and literals.
    pub args: Vec<AstArg>,
    /// Attributes in written order.
    pub attrs: Vec<AstAttr>,
    /// Result types, when written.
    pub types: Option<Vec<AstType>>,
    /// The whole statement.
    pub span: Span,
}

/// What an op statement applies.
#[derive(Clone, Debug)]
pub enum AstCallee {
    /// A dialect op, `dialect.name`.
    Op(Name),
    /// `call @function`.
    Call(Name),
}

/// A positional argument of an op.
#[derive(Clone, Debug)]
pub enum AstArg {
    /// A use of an SSA value.
    Value(Name),
    /// A `dense<...>` literal.
    Dense(AstDense),
    /// An `external<"file", "key">` literal.
    External(AstExternal),
}

impl AstArg {
    /// Where the argument was written.
    pub fn span(&self) -> Span {
        match self {
            AstArg::Value(name) => name.span,
            AstArg::Dense(dense) => dense.span,
            AstArg::External(external) => external.span,
        }
    }
}

/// `external<"file", "key">`: a tensor stored in a side file.
#[derive(Clone, Debug)]
pub struct AstExternal {
    /// The side file's path relative to the module's folder, escapes resolved, and its place.
    pub file: (String, Span),
    /// The tensor's key in that file, and its place.
    pub key: (String, Span),
    /// The whole `external<...>`.
    pub span: Span,
}

/// `dense<...>`.
#[derive(Clone, Debug)]
pub struct AstDense {
    /// The literal's contents.
    pub body: AstLiteral,
    /// The whole `dense<...>`.
    pub span: Span,
}

/// A scalar or nested list inside `dense<...>`.
#[derive(Clone, Debug)]
pub enum AstLiteral {
    /// A number or boolean.
    Scalar(AstScalar),
    /// `[a, b, ...]`.
    List(Vec<AstLiteral>, Span),
}

/// A scalar literal as written.
#[derive(Clone, Debug)]
pub struct AstScalar {
    /// Integer, float or boolean.
    pub kind: ScalarKind,
    /// The text.
    pub text: String,
    /// Its place.
    pub span: Span,
}

/// The lexical kind of a scalar literal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarKind {
    /// `12`, `-3`.
    Int,
    /// `1.5`, `2e-3`, `inf`, `nan`.
    Float,
    /// `true`, `false`.
    Bool,
}

/// `key = value`.
#[derive(Clone, Debug)]
pub struct AstAttr {
    /// The key.
    pub key: Name,
    /// The value.
    pub value: AstAttrValue,
}

/// An attribute value as written.
#[derive(Clone, Debug)]
pub enum AstAttrValue {
    /// A number or boolean.
    Scalar(AstScalar),
    /// A string, escapes resolved.
    Str(String, Span),
    /// `[...]`.
    List(Vec<AstAttrValue>, Span),
}

impl AstAttrValue {
    /// Where the value was written.
    pub fn span(&self) -> Span {
        match self {
            AstAttrValue::Scalar(s) => s.span,
            AstAttrValue::Str(_, span) | AstAttrValue::List(_, span) => *span,
        }
    }
}

/// `return %a, %b : T, U`.
#[derive(Clone, Debug)]
pub struct AstReturn {
    /// The returned values.
    pub values: Vec<Name>,
    /// Their types, when written.
    pub types: Option<Vec<AstType>>,
    /// The whole statement.
    pub span: Span,
}
