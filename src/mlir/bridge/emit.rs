//! The emitter: builds func/tensor/linalg/arith/math operations into one block through
//! melior's `OperationBuilder`, with the location of the `.tsr` op being converted.
//!
//! Tensor-level helpers (`empty`, `constant`, `fill`, `generic`, `structured`) build whole
//! linalg ops; scalar helpers (`arith`, `float_const`, `cmpf`, ...) build the payload inside a
//! linalg body, where the emitter's block is the body's block.

use crate::attr::{DenseValue, Scalar};
use crate::mlir::bridge::affine::{affine_map_attr, MapExpr};
use crate::types::{ElementClass, ElementType, TensorType};
use melior::ir::attribute::{
    ArrayAttribute, DenseElementsAttribute, DenseI32ArrayAttribute, FloatAttribute,
    IntegerAttribute,
};
use melior::ir::operation::{OperationBuilder, OperationRef};
use melior::ir::r#type::{IntegerType, RankedTensorType};
use melior::ir::{
    Attribute, Block, BlockLike, Identifier, Location, Region, RegionLike, ShapedTypeLike, Type,
    TypeLike, Value, ValueLike,
};
use melior::Context;

/// Why building MLIR failed: melior refused an operation (an internal error of a conversion).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot build MLIR: {0}")]
pub struct ConvertError(pub String);

impl From<melior::Error> for ConvertError {
    fn from(error: melior::Error) -> ConvertError {
        ConvertError(error.to_string())
    }
}

/// Structured ops whose `ins` and `outs` are single operands (no `operandSegmentSizes`).
const FIXED_OPERANDS: &[&str] = &["linalg.transpose"];

/// The result of a conversion step.
pub type ConvertResult<T> = Result<T, ConvertError>;

/// A loop's role in a linalg op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IteratorKind {
    /// Independent iterations.
    Parallel,
    /// Iterations that accumulate into the same output element.
    Reduction,
}

/// A generic's operand: a value and how the loop nest indexes it.
pub struct Indexed<'c, 'a> {
    /// The tensor.
    pub value: Value<'c, 'a>,
    /// Its indexing map's results.
    pub map: Vec<MapExpr>,
}

/// Builds operations into `block` at `location`.
#[derive(Clone, Copy)]
pub struct Emitter<'c, 'a> {
    /// The MLIR context.
    pub context: &'c Context,
    /// Where operations go, in order.
    pub block: &'a Block<'c>,
    /// The location every operation gets.
    pub location: Location<'c>,
}

impl<'c, 'a> Emitter<'c, 'a> {
    /// The MLIR type of `element` (`i1` for booleans; `i8`, the byte each is stored in, for
    /// the storage-only types, whose casts this crate's lowerings spell out in integer and
    /// table operations, since MLIR 19 lowers no arithmetic on them to LLVM).
    pub fn element_type(&self, element: ElementType) -> Type<'c> {
        match element {
            ElementType::F32 => Type::float32(self.context),
            ElementType::F64 => Type::float64(self.context),
            ElementType::F16 => Type::float16(self.context),
            ElementType::BF16 => Type::bfloat16(self.context),
            other if other.is_storage_only() => IntegerType::new(self.context, 8).into(),
            other => IntegerType::new(self.context, other.bit_width()).into(),
        }
    }

    /// The MLIR `tensor<...>` type of `ty`.
    pub fn tensor_type(&self, ty: &TensorType) -> Type<'c> {
        RankedTensorType::new(&ty.shape, self.element_type(ty.element), None).into()
    }

    /// `index`.
    pub fn index_type(&self) -> Type<'c> {
        Type::index(self.context)
    }

    /// A named attribute.
    pub fn named(&self, name: &str, value: Attribute<'c>) -> (Identifier<'c>, Attribute<'c>) {
        (Identifier::new(self.context, name), value)
    }

    /// Builds and appends `builder`'s operation.
    pub fn append(&self, builder: OperationBuilder<'c>) -> ConvertResult<OperationRef<'c, 'a>> {
        Ok(self.block.append_operation(builder.build()?))
    }

    /// Builds and appends an operation with one result, and returns that result.
    pub fn append_value(&self, builder: OperationBuilder<'c>) -> ConvertResult<Value<'c, 'a>> {
        Ok(self.append(builder)?.result(0)?.into())
    }

    /// An operation builder at this emitter's location.
    pub fn builder(&self, name: &str) -> OperationBuilder<'c> {
        OperationBuilder::new(name, self.location)
    }

    /// `tensor.empty() : ty`.
    pub fn empty(&self, ty: &TensorType) -> ConvertResult<Value<'c, 'a>> {
        self.append_value(
            self.builder("tensor.empty")
                .add_results(&[self.tensor_type(ty)]),
        )
    }

    /// `arith.constant dense<...> : ty`.
    pub fn constant(&self, ty: &TensorType, value: &DenseValue) -> ConvertResult<Value<'c, 'a>> {
        let tensor_type = self.tensor_type(ty);
        let attr: Attribute<'c> = match value {
            DenseValue::External(tensor) if ty.element != ElementType::I1 => {
                raw_dense_attr(tensor_type, &tensor.bytes)
            }
            _ => {
                let count = match value {
                    DenseValue::Splat(_) => 1,
                    _ => ty.num_elements().unwrap_or(0) as usize,
                };
                let elements: Vec<Attribute<'c>> = (0..count)
                    .map(|i| self.scalar_attr(ty.element, value.get(i)))
                    .collect();
                DenseElementsAttribute::new(tensor_type, &elements)?.into()
            }
        };
        self.append_value(
            self.builder("arith.constant")
                .add_attributes(&[self.named("value", attr)])
                .add_results(&[tensor_type]),
        )
    }

    /// A tensor of `ty` whose every element is `value`.
    pub fn splat(&self, ty: &TensorType, value: f64) -> ConvertResult<Value<'c, 'a>> {
        self.constant(ty, &DenseValue::Splat(scalar_of(ty.element, value)))
    }

    /// The attribute of one element of type `element`.
    fn scalar_attr(&self, element: ElementType, value: Scalar) -> Attribute<'c> {
        let ty = self.element_type(element);
        if let Some(format) = element.minifloat() {
            // Stored as its code's byte.
            return IntegerAttribute::new(ty, i64::from(format.encode(value.as_f64()) as i8))
                .into();
        }
        match (element.class(), value) {
            (ElementClass::Float, v) => FloatAttribute::new(self.context, ty, v.as_f64()).into(),
            (_, Scalar::Bool(b)) => IntegerAttribute::new(ty, i64::from(b)).into(),
            (_, Scalar::Int(i)) => IntegerAttribute::new(ty, i).into(),
            (_, Scalar::Float(f)) => IntegerAttribute::new(ty, f as i64).into(),
        }
    }

    /// A scalar `arith.constant` of `element` type.
    pub fn scalar_const(&self, element: ElementType, value: f64) -> ConvertResult<Value<'c, 'a>> {
        let attr = self.scalar_attr(element, scalar_of(element, value));
        self.append_value(
            self.builder("arith.constant")
                .add_attributes(&[self.named("value", attr)])
                .add_results(&[self.element_type(element)]),
        )
    }

    /// A scalar `arith.constant` of integer type `element` holding `value` exactly (as
    /// stored: `ui64`'s upper half as the `i64` with the same bits).
    pub fn int_const(&self, element: ElementType, value: i64) -> ConvertResult<Value<'c, 'a>> {
        let attr = self.scalar_attr(element, Scalar::Int(value));
        self.append_value(
            self.builder("arith.constant")
                .add_attributes(&[self.named("value", attr)])
                .add_results(&[self.element_type(element)]),
        )
    }

    /// A scalar constant of the same type as `like`.
    pub fn const_like(&self, like: Value<'c, '_>, value: f64) -> ConvertResult<Value<'c, 'a>> {
        let ty = like.r#type();
        let element = ElementType::ALL
            .into_iter()
            .find(|&el| self.element_type(el) == ty)
            .ok_or_else(|| ConvertError(format!("no tessera element type for {ty}")))?;
        self.scalar_const(element, value)
    }

    /// An `index` constant.
    pub fn index_const(&self, value: i64) -> ConvertResult<Value<'c, 'a>> {
        let attr = IntegerAttribute::new(self.index_type(), value).into();
        self.append_value(
            self.builder("arith.constant")
                .add_attributes(&[self.named("value", attr)])
                .add_results(&[self.index_type()]),
        )
    }

    /// `linalg.index dim`: inside a linalg body, the position along loop `dim`.
    pub fn loop_index(&self, dim: usize) -> ConvertResult<Value<'c, 'a>> {
        let dim = IntegerAttribute::new(IntegerType::new(self.context, 64).into(), dim as i64);
        self.append_value(
            self.builder("linalg.index")
                .add_attributes(&[self.named("dim", dim.into())])
                .add_results(&[self.index_type()]),
        )
    }

    /// A tensor of `ty` filled with `value` (`linalg.fill` of a `tensor.empty`).
    pub fn fill(&self, ty: &TensorType, value: f64) -> ConvertResult<Value<'c, 'a>> {
        self.fill_scalar(ty, scalar_of(ty.element, value))
    }

    /// A tensor of `ty` filled with the exact element `value` (integers keep all 64 bits).
    pub fn fill_scalar(&self, ty: &TensorType, value: Scalar) -> ConvertResult<Value<'c, 'a>> {
        let attr = self.scalar_attr(ty.element, value);
        let scalar = self.append_value(
            self.builder("arith.constant")
                .add_attributes(&[self.named("value", attr)])
                .add_results(&[self.element_type(ty.element)]),
        )?;
        let empty = self.empty(ty)?;
        let element = self.element_type(ty.element);
        self.structured(
            "linalg.fill",
            &[scalar],
            &[(empty, ty)],
            vec![],
            &[element, element],
            |_, args| Ok(vec![args[0]]),
        )
        .map(|results| results[0])
    }

    /// A linalg structured op (`linalg.generic` or a named op such as `linalg.matmul`) with
    /// its payload region: a block whose arguments have `block_args` types, filled by `body`
    /// from those arguments and ended by `linalg.yield`.
    pub fn structured(
        &self,
        name: &str,
        inputs: &[Value<'c, 'a>],
        outputs: &[(Value<'c, 'a>, &TensorType)],
        attributes: Vec<(Identifier<'c>, Attribute<'c>)>,
        block_args: &[Type<'c>],
        body: impl for<'b> FnOnce(
            &Emitter<'c, 'b>,
            &[Value<'c, 'b>],
        ) -> ConvertResult<Vec<Value<'c, 'b>>>,
    ) -> ConvertResult<Vec<Value<'c, 'a>>> {
        let block = Block::new(
            &block_args
                .iter()
                .map(|&t| (t, self.location))
                .collect::<Vec<_>>(),
        );
        {
            let inner = Emitter {
                context: self.context,
                block: &block,
                location: self.location,
            };
            let args: Vec<Value<'c, '_>> = (0..block_args.len())
                .map(|i| block.argument(i).map(Into::into))
                .collect::<Result<_, _>>()?;
            let yielded = body(&inner, &args)?;
            inner.append(inner.builder("linalg.yield").add_operands(&yielded))?;
        }
        let region = Region::new();
        region.append_block(block);
        let mut all_attributes = attributes;
        // Ops with variadic `ins`/`outs` say how many of each; those with single ones do not.
        if !FIXED_OPERANDS.contains(&name) {
            let segments = DenseI32ArrayAttribute::new(
                self.context,
                &[inputs.len() as i32, outputs.len() as i32],
            );
            all_attributes.push(self.named("operandSegmentSizes", segments.into()));
        }
        let out_values: Vec<Value<'c, 'a>> = outputs.iter().map(|(v, _)| *v).collect();
        let result_types: Vec<Type<'c>> =
            outputs.iter().map(|(_, t)| self.tensor_type(t)).collect();
        let op = self.append(
            self.builder(name)
                .add_operands(inputs)
                .add_operands(&out_values)
                .add_attributes(&all_attributes)
                .add_regions([region])
                .add_results(&result_types),
        )?;
        (0..outputs.len())
            .map(|i| Ok(op.result(i)?.into()))
            .collect()
    }

    /// `linalg.generic` over a loop nest of `iterators`, reading `inputs`, writing `outputs`
    /// (each with its indexing map); `body` maps the scalar elements (inputs, then outputs)
    /// to the yielded values.
    pub fn generic(
        &self,
        inputs: &[Indexed<'c, 'a>],
        outputs: &[(Indexed<'c, 'a>, &TensorType)],
        iterators: &[IteratorKind],
        body: impl for<'b> FnOnce(
            &Emitter<'c, 'b>,
            &[Value<'c, 'b>],
        ) -> ConvertResult<Vec<Value<'c, 'b>>>,
    ) -> ConvertResult<Vec<Value<'c, 'a>>> {
        let loops = iterators.len();
        let maps: Vec<Attribute<'c>> = inputs
            .iter()
            .map(|i| &i.map)
            .chain(outputs.iter().map(|(o, _)| &o.map))
            .map(|m| affine_map_attr(self.context, loops, m))
            .collect();
        let iterator_attrs: Vec<Attribute<'c>> = iterators
            .iter()
            .map(|k| self.iterator_attr(*k))
            .collect::<ConvertResult<_>>()?;
        let attributes = vec![
            self.named(
                "indexing_maps",
                ArrayAttribute::new(self.context, &maps).into(),
            ),
            self.named(
                "iterator_types",
                ArrayAttribute::new(self.context, &iterator_attrs).into(),
            ),
        ];
        let block_args: Vec<Type<'c>> = inputs
            .iter()
            .map(|i| i.value)
            .chain(outputs.iter().map(|(o, _)| o.value))
            .map(|v| element_of(v.r#type()))
            .collect::<ConvertResult<_>>()?;
        let input_values: Vec<Value<'c, 'a>> = inputs.iter().map(|i| i.value).collect();
        let output_values: Vec<(Value<'c, 'a>, &TensorType)> =
            outputs.iter().map(|(o, t)| (o.value, *t)).collect();
        self.structured(
            "linalg.generic",
            &input_values,
            &output_values,
            attributes,
            &block_args,
            body,
        )
    }

    /// `#linalg.iterator_type<...>`. The C API has no constructor for this enum attribute, so
    /// it is parsed from its (fixed) spelling.
    fn iterator_attr(&self, kind: IteratorKind) -> ConvertResult<Attribute<'c>> {
        let text = match kind {
            IteratorKind::Parallel => "#linalg.iterator_type<parallel>",
            IteratorKind::Reduction => "#linalg.iterator_type<reduction>",
        };
        Attribute::parse(self.context, text)
            .ok_or_else(|| ConvertError(format!("cannot create {text}")))
    }

    /// A scalar operation `name` of `operands` with one result of `result` type.
    pub fn op(
        &self,
        name: &str,
        operands: &[Value<'c, 'a>],
        result: Type<'c>,
    ) -> ConvertResult<Value<'c, 'a>> {
        self.append_value(
            self.builder(name)
                .add_operands(operands)
                .add_results(&[result]),
        )
    }

    /// A scalar operation whose result has its first operand's type (`arith.addf`, `math.exp`).
    pub fn same(&self, name: &str, operands: &[Value<'c, 'a>]) -> ConvertResult<Value<'c, 'a>> {
        self.op(name, operands, operands[0].r#type())
    }

    /// `arith.cmpf` or `arith.cmpi` with `predicate` (MLIR's numbering), giving `i1`.
    pub fn compare(
        &self,
        float: bool,
        predicate: i64,
        a: Value<'c, 'a>,
        b: Value<'c, 'a>,
    ) -> ConvertResult<Value<'c, 'a>> {
        let i1 = IntegerType::new(self.context, 1).into();
        let attr_type = IntegerType::new(self.context, 64).into();
        let name = if float { "arith.cmpf" } else { "arith.cmpi" };
        self.append_value(
            self.builder(name)
                .add_operands(&[a, b])
                .add_attributes(&[self.named(
                    "predicate",
                    IntegerAttribute::new(attr_type, predicate).into(),
                )])
                .add_results(&[i1]),
        )
    }

    /// `arith.select %cond, %a, %b`.
    pub fn select(
        &self,
        cond: Value<'c, 'a>,
        a: Value<'c, 'a>,
        b: Value<'c, 'a>,
    ) -> ConvertResult<Value<'c, 'a>> {
        self.op("arith.select", &[cond, a, b], a.r#type())
    }
}

/// The element type of a shaped MLIR type.
fn element_of(ty: Type<'_>) -> ConvertResult<Type<'_>> {
    RankedTensorType::try_from(ty)
        .map(|t| t.element())
        .map_err(|e| ConvertError(e.to_string()))
}

/// `value` as an element of type `element`.
pub fn scalar_of(element: ElementType, value: f64) -> Scalar {
    match element.class() {
        ElementClass::Float => Scalar::Float(value),
        ElementClass::Int => Scalar::Int(element.wrap_int(value as i128)),
        ElementClass::Bool => Scalar::Bool(value != 0.0),
    }
}

/// `arith.cmpf` predicates (MLIR's `CmpFPredicate` numbering).
pub mod cmpf {
    /// Ordered and equal.
    pub const OEQ: i64 = 1;
    /// Ordered and greater than.
    pub const OGT: i64 = 2;
    /// Ordered and greater than or equal.
    pub const OGE: i64 = 3;
    /// Ordered and less than.
    pub const OLT: i64 = 4;
    /// Ordered and less than or equal.
    pub const OLE: i64 = 5;
    /// Unordered (either is NaN).
    pub const UNO: i64 = 14;
    /// Unordered or not equal.
    pub const UNE: i64 = 13;
}

/// `arith.cmpi` predicates (MLIR's `CmpIPredicate` numbering).
pub mod cmpi {
    /// Equal.
    pub const EQ: i64 = 0;
    /// Not equal.
    pub const NE: i64 = 1;
    /// Signed less than.
    pub const SLT: i64 = 2;
    /// Signed less than or equal.
    pub const SLE: i64 = 3;
    /// Signed greater than.
    pub const SGT: i64 = 4;
    /// Signed greater than or equal.
    pub const SGE: i64 = 5;
    /// Unsigned less than.
    pub const ULT: i64 = 6;
    /// Unsigned less than or equal.
    pub const ULE: i64 = 7;
    /// Unsigned greater than.
    pub const UGT: i64 = 8;
    /// Unsigned greater than or equal.
    pub const UGE: i64 = 9;
}

/// The dense elements attribute of `tensor_type` whose elements `bytes` holds, little-endian
/// in row-major order, exactly as many as the type has (not `i1`, which MLIR packs in bits).
fn raw_dense_attr<'c>(tensor_type: Type<'c>, bytes: &[u8]) -> Attribute<'c> {
    // SAFETY: `tensor_type` is a ranked tensor type of the context 'c; `bytes` holds exactly
    // its elements at their byte width (the verifier checked the side file's tensor against
    // the type), which is the raw layout MLIR expects on a little-endian host; MLIR copies the
    // buffer into attribute storage owned by the context, so `bytes` may go after the call.
    unsafe {
        Attribute::from_raw(mlir_sys::mlirDenseElementsAttrRawBufferGet(
            tensor_type.to_raw(),
            bytes.len(),
            bytes.as_ptr().cast(),
        ))
    }
}
