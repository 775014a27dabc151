//! Tensor-level building blocks shared by conversions: elementwise maps with numpy
//! broadcasting, slices, reshapes, transposes, padding, and reduction identities.

use crate::attr::Scalar;
use crate::mlir::bridge::affine::{broadcast_map, identity};
use crate::mlir::bridge::emit::{scalar_of, ConvertResult, Emitter, Indexed, IteratorKind};
use crate::types::{ElementClass, ElementType, TensorType};
use melior::ir::attribute::{
    ArrayAttribute, DenseI32ArrayAttribute, DenseI64ArrayAttribute, IntegerAttribute,
};
use melior::ir::r#type::IntegerType;
use melior::ir::{Attribute, Value};

impl<'c, 'a> Emitter<'c, 'a> {
    /// A `linalg.generic` computing `result` elementwise from `inputs`, each broadcast (numpy
    /// rules) to the result's shape; `body` maps one element of each input to the result's.
    pub fn elementwise(
        &self,
        inputs: &[(Value<'c, 'a>, &TensorType)],
        result: &TensorType,
        body: impl for<'b> FnOnce(&Emitter<'c, 'b>, &[Value<'c, 'b>]) -> ConvertResult<Value<'c, 'b>>,
    ) -> ConvertResult<Value<'c, 'a>> {
        let indexed: Vec<Indexed<'c, 'a>> = inputs
            .iter()
            .map(|(value, ty)| Indexed {
                value: *value,
                map: broadcast_map(&ty.shape, &result.shape),
            })
            .collect();
        let init = Indexed {
            value: self.empty(result)?,
            map: identity(result.rank()),
        };
        let iterators = vec![IteratorKind::Parallel; result.rank()];
        let results = self.generic(&indexed, &[(init, result)], &iterators, |inner, args| {
            Ok(vec![body(inner, &args[..args.len() - 1])?])
        })?;
        Ok(results[0])
    }

    /// `x`, of element type `from`, as `to` (`arith.extf`/`truncf` for floats of different
    /// widths); `x` itself when the types are equal.
    pub fn float_as(
        &self,
        x: Value<'c, 'a>,
        from: ElementType,
        to: ElementType,
    ) -> ConvertResult<Value<'c, 'a>> {
        let target = self.element_type(to);
        match from.bit_width().cmp(&to.bit_width()) {
            _ if from == to => Ok(x),
            std::cmp::Ordering::Less => self.op("arith.extf", &[x], target),
            _ => self.op("arith.truncf", &[x], target),
        }
    }

    /// `accumulated` (of `accumulated_ty`, the accumulator type of `result`'s elements)
    /// rounded to `result`; `accumulated` itself when the types are equal.
    pub fn rounded(
        &self,
        accumulated: Value<'c, 'a>,
        accumulated_ty: &TensorType,
        result: &TensorType,
    ) -> ConvertResult<Value<'c, 'a>> {
        if accumulated_ty == result {
            return Ok(accumulated);
        }
        let (from, to) = (accumulated_ty.element, result.element);
        self.elementwise(&[(accumulated, accumulated_ty)], result, |inner, x| {
            inner.float_as(x[0], from, to)
        })
    }

    /// `tensor.extract_slice %source[offsets] [sizes] [strides]` into `result`.
    pub fn extract_slice(
        &self,
        source: Value<'c, 'a>,
        result: &TensorType,
        offsets: &[i64],
        strides: &[i64],
    ) -> ConvertResult<Value<'c, 'a>> {
        let sizes: Vec<i64> = result.shape.iter().map(|&d| d as i64).collect();
        self.append_value(
            self.builder("tensor.extract_slice")
                .add_operands(&[source])
                .add_attributes(&[
                    self.named(
                        "static_offsets",
                        DenseI64ArrayAttribute::new(self.context, offsets).into(),
                    ),
                    self.named(
                        "static_sizes",
                        DenseI64ArrayAttribute::new(self.context, &sizes).into(),
                    ),
                    self.named(
                        "static_strides",
                        DenseI64ArrayAttribute::new(self.context, strides).into(),
                    ),
                    self.named(
                        "operandSegmentSizes",
                        DenseI32ArrayAttribute::new(self.context, &[1, 0, 0, 0]).into(),
                    ),
                ])
                .add_results(&[self.tensor_type(result)]),
        )
    }

    /// `tensor.insert_slice %source into %dest[offsets]` (unit strides); `dest` has type `dest_ty`.
    pub fn insert_slice(
        &self,
        source: Value<'c, 'a>,
        source_ty: &TensorType,
        dest: Value<'c, 'a>,
        dest_ty: &TensorType,
        offsets: &[i64],
    ) -> ConvertResult<Value<'c, 'a>> {
        let sizes: Vec<i64> = source_ty.shape.iter().map(|&d| d as i64).collect();
        let strides = vec![1; sizes.len()];
        self.append_value(
            self.builder("tensor.insert_slice")
                .add_operands(&[source, dest])
                .add_attributes(&[
                    self.named(
                        "static_offsets",
                        DenseI64ArrayAttribute::new(self.context, offsets).into(),
                    ),
                    self.named(
                        "static_sizes",
                        DenseI64ArrayAttribute::new(self.context, &sizes).into(),
                    ),
                    self.named(
                        "static_strides",
                        DenseI64ArrayAttribute::new(self.context, &strides).into(),
                    ),
                    self.named(
                        "operandSegmentSizes",
                        DenseI32ArrayAttribute::new(self.context, &[1, 1, 0, 0, 0]).into(),
                    ),
                ])
                .add_results(&[self.tensor_type(dest_ty)]),
        )
    }

    /// `source` surrounded by `low`/`high` elements of `value` in each dimension.
    pub fn pad(
        &self,
        source: Value<'c, 'a>,
        source_ty: &TensorType,
        low: &[u64],
        high: &[u64],
        value: Scalar,
    ) -> ConvertResult<(Value<'c, 'a>, TensorType)> {
        if low.iter().chain(high).all(|&p| p == 0) {
            return Ok((source, source_ty.clone()));
        }
        let shape = (0..source_ty.rank())
            .map(|d| low[d] + source_ty.shape[d] + high[d])
            .collect();
        let padded_ty = TensorType::new(shape, source_ty.element);
        let filled = self.fill_scalar(&padded_ty, value)?;
        let offsets: Vec<i64> = low.iter().map(|&l| l as i64).collect();
        let padded = self.insert_slice(source, source_ty, filled, &padded_ty, &offsets)?;
        Ok((padded, padded_ty))
    }

    /// The same elements in row-major order under `result`'s shape: a collapse to one
    /// dimension and an expansion, either left out when not needed.
    pub fn reshape(
        &self,
        source: Value<'c, 'a>,
        source_ty: &TensorType,
        result: &TensorType,
    ) -> ConvertResult<Value<'c, 'a>> {
        if source_ty.shape == result.shape {
            return Ok(source);
        }
        let count = result.num_elements().unwrap_or(0);
        let flat_ty = TensorType::new(vec![count], result.element);
        // Rank 0 holds one element: it reshapes to and from any all-ones shape directly.
        if source_ty.rank() == 0 || result.rank() == 0 {
            let (name, groups) = if source_ty.rank() == 0 {
                ("tensor.expand_shape", vec![])
            } else {
                ("tensor.collapse_shape", vec![])
            };
            return self.reassociate(name, source, result, &groups);
        }
        let flat = match source_ty.rank() {
            1 => source,
            rank => self.reassociate(
                "tensor.collapse_shape",
                source,
                &flat_ty,
                &[(0..rank).collect()],
            )?,
        };
        match result.rank() {
            1 => Ok(flat),
            rank => self.reassociate("tensor.expand_shape", flat, result, &[(0..rank).collect()]),
        }
    }

    /// `tensor.collapse_shape` or `tensor.expand_shape` with `groups` as reassociation.
    fn reassociate(
        &self,
        name: &str,
        source: Value<'c, 'a>,
        result: &TensorType,
        groups: &[Vec<usize>],
    ) -> ConvertResult<Value<'c, 'a>> {
        let i64_type = IntegerType::new(self.context, 64).into();
        let groups: Vec<Attribute<'c>> = groups
            .iter()
            .map(|g| {
                let dims: Vec<Attribute<'c>> = g
                    .iter()
                    .map(|&d| IntegerAttribute::new(i64_type, d as i64).into())
                    .collect();
                ArrayAttribute::new(self.context, &dims).into()
            })
            .collect();
        let mut attributes = vec![self.named(
            "reassociation",
            ArrayAttribute::new(self.context, &groups).into(),
        )];
        if name == "tensor.expand_shape" {
            let shape: Vec<i64> = result.shape.iter().map(|&d| d as i64).collect();
            attributes.push(self.named(
                "static_output_shape",
                DenseI64ArrayAttribute::new(self.context, &shape).into(),
            ));
        }
        self.append_value(
            self.builder(name)
                .add_operands(&[source])
                .add_attributes(&attributes)
                .add_results(&[self.tensor_type(result)]),
        )
    }

    /// `linalg.transpose` of `source` into `result` by `permutation`.
    pub fn transpose(
        &self,
        source: Value<'c, 'a>,
        result: &TensorType,
        permutation: &[i64],
    ) -> ConvertResult<Value<'c, 'a>> {
        // The identity permutation (rank 0 included, on which MLIR 19's linalg.transpose
        // crashes) moves nothing.
        if permutation.iter().enumerate().all(|(i, &p)| p == i as i64) {
            return Ok(source);
        }
        let init = self.empty(result)?;
        let element = self.element_type(result.element);
        let attributes = vec![self.named(
            "permutation",
            DenseI64ArrayAttribute::new(self.context, permutation).into(),
        )];
        let results = self.structured(
            "linalg.transpose",
            &[source],
            &[(init, result)],
            attributes,
            &[element, element],
            |_, args| Ok(vec![args[0]]),
        )?;
        Ok(results[0])
    }
}

/// The identity of a reduction over `element` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReductionIdentity {
    /// 0, for sums.
    Zero,
    /// 1, for products.
    One,
    /// The lowest value (`-inf`, or the minimum integer), for maxima.
    Lowest,
    /// The highest value (`inf`, or the maximum integer), for minima.
    Highest,
}

impl ReductionIdentity {
    /// The identity as an exact element of `element` type (integers keep all their bits: the
    /// largest `ui64` is no f64).
    pub fn scalar(self, element: ElementType) -> Scalar {
        if element.class() != ElementClass::Int {
            return scalar_of(element, self.value(element));
        }
        let (lowest, highest) = element.int_bounds();
        let value = match self {
            ReductionIdentity::Zero => 0,
            ReductionIdentity::One => 1,
            ReductionIdentity::Lowest => lowest,
            ReductionIdentity::Highest => highest,
        };
        Scalar::Int(element.wrap_int(value))
    }

    /// The identity as a number of `element` type.
    pub fn value(self, element: ElementType) -> f64 {
        match (self, element.class()) {
            (ReductionIdentity::Zero, _) => 0.0,
            (ReductionIdentity::One, _) => 1.0,
            (ReductionIdentity::Lowest, ElementClass::Float) => f64::NEG_INFINITY,
            (ReductionIdentity::Highest, ElementClass::Float) => f64::INFINITY,
            (ReductionIdentity::Lowest, ElementClass::Bool) => 0.0,
            (ReductionIdentity::Highest, ElementClass::Bool) => 1.0,
            (ReductionIdentity::Lowest, ElementClass::Int) => element.int_bounds().0 as f64,
            (ReductionIdentity::Highest, ElementClass::Int) => element.int_bounds().1 as f64,
        }
    }
}
