//! What a shape rule sees of an op (operand types, attributes, written result types) and the
//! checks shape rules share: axes, broadcasting, element classes.
//!
//! Every check reports at the culprit (an operand, an attribute, the op) and returns `None`;
//! rules chain them with `?` and stop at the first failure of their own.

use crate::attr::Attribute;
use crate::diag::Diagnostic;
use crate::dialect::{Arity, AttrDefault, OpDef, OpSchema};
use crate::source::Span;
use crate::types::{ElementClass, ElementType, TensorType};
use std::collections::BTreeMap;

/// The largest dimension and element count a tensor may have (MLIR's `int64_t`).
pub const MAX_EXTENT: u64 = i64::MAX as u64;

/// An op under verification, as its shape rule sees it.
pub struct InferContext<'a> {
    schema: &'static OpSchema,
    operands: &'a [(TensorType, Span)],
    attrs: &'a BTreeMap<String, (Attribute, Span)>,
    written: Option<&'a [(TensorType, Span)]>,
    span: Span,
    diags: &'a mut Vec<Diagnostic>,
}

impl<'a> InferContext<'a> {
    /// A context for one op; the verifier builds it.
    pub fn new(
        schema: &'static OpSchema,
        operands: &'a [(TensorType, Span)],
        attrs: &'a BTreeMap<String, (Attribute, Span)>,
        written: Option<&'a [(TensorType, Span)]>,
        span: Span,
        diags: &'a mut Vec<Diagnostic>,
    ) -> InferContext<'a> {
        InferContext {
            schema,
            operands,
            attrs,
            written,
            span,
            diags,
        }
    }

    /// `'dialect.name'`, quoted for messages.
    fn quoted_name(&self) -> String {
        format!("'{}'", self.schema.full_name())
    }

    /// Number of operands given.
    pub fn operand_count(&self) -> usize {
        self.operands.len()
    }

    /// The type of operand `index`.
    pub fn operand(&self, index: usize) -> &'a TensorType {
        &self.operands[index].0
    }

    /// The type of operand `index`, when given (for optional operands).
    pub fn optional_operand(&self, index: usize) -> Option<&'a TensorType> {
        self.operands.get(index).map(|(t, _)| t)
    }

    /// The written result type `index`, when the result types were written.
    pub fn written_result(&self, index: usize) -> Option<&'a TensorType> {
        self.written.and_then(|w| w.get(index)).map(|(t, _)| t)
    }

    /// The value of attribute `name`: as written, else its default (`None` when absent
    /// without a default value).
    pub fn attr(&self, name: &str) -> Option<Attribute> {
        if let Some((value, _)) = self.attrs.get(name) {
            return Some(value.clone());
        }
        match self.schema.attr(name).map(|spec| spec.default) {
            Some(AttrDefault::Value(v)) => Some(v.to_attribute()),
            _ => None,
        }
    }

    /// Attribute `name` as an integer (the verifier has checked its kind).
    pub fn int(&self, name: &str) -> i64 {
        self.attr(name).and_then(|a| a.as_int()).unwrap_or(0)
    }

    /// Attribute `name` as a float, when present.
    pub fn float(&self, name: &str) -> Option<f64> {
        self.attr(name).and_then(|a| a.as_f64())
    }

    /// Attribute `name` as a list of integers, when present and a list.
    pub fn int_list(&self, name: &str) -> Option<Vec<i64>> {
        self.attr(name).and_then(|a| a.as_int_list())
    }

    /// Attribute `name` as a string, when present and a string.
    pub fn string(&self, name: &str) -> Option<String> {
        self.attr(name).and_then(|a| a.as_str().map(String::from))
    }

    /// Where attribute `name` was written, or the op when it was not.
    pub fn attr_span(&self, name: &str) -> Span {
        self.attrs.get(name).map_or(self.span, |(_, s)| *s)
    }

    /// Reports `message` at the op.
    pub fn error(&mut self, message: impl Into<String>) -> Option<()> {
        let message = format!("{} {}", self.quoted_name(), message.into());
        self.diags.push(Diagnostic::error(self.span, message));
        None
    }

    /// Reports `message` at operand `index`.
    pub fn operand_error(&mut self, index: usize, message: impl Into<String>) -> Option<()> {
        let span = self.operands.get(index).map_or(self.span, |(_, s)| *s);
        let message = format!("{} {}", self.quoted_name(), message.into());
        self.diags.push(Diagnostic::error(span, message));
        None
    }

    /// Reports `message` at attribute `name` (at the op when it was not written).
    pub fn attr_error(&mut self, name: &str, message: impl Into<String>) -> Option<()> {
        let span = self.attr_span(name);
        let message = format!("{} {}", self.quoted_name(), message.into());
        self.diags.push(Diagnostic::error(span, message));
        None
    }

    /// How messages name operand `index`: `operand 'x'` by its schema name, or `operand #2`
    /// within a variadic list.
    pub fn label(&self, index: usize) -> String {
        match self.schema.operands.get(index) {
            Some(spec) if spec.arity != Arity::Variadic => format!("operand '{}'", spec.name),
            _ => format!("operand #{index}"),
        }
    }

    /// Requires operand `index` to have an element type of `class`.
    pub fn require_class(&mut self, index: usize, classes: &[ElementClass]) -> Option<()> {
        let element = self.operand(index).element;
        if classes.contains(&element.class()) {
            return Some(());
        }
        let wanted: Vec<&str> = classes
            .iter()
            .map(|c| match c {
                ElementClass::Float => "float",
                ElementClass::Int => "integer",
                ElementClass::Bool => "i1",
            })
            .collect();
        let name = self.label(index);
        self.operand_error(
            index,
            format!(
                "{name} must have {} elements, but has {element}",
                wanted.join(" or ")
            ),
        )
    }

    /// Requires operands `indices` to share one element type, and returns it.
    pub fn same_element(&mut self, indices: &[usize]) -> Option<ElementType> {
        let first = self.operand(indices[0]).element;
        for &i in &indices[1..] {
            let other = self.operand(i).element;
            if other != first {
                let (a, b) = (self.label(indices[0]), self.label(i));
                return self
                    .operand_error(
                        i,
                        format!("{b} element type ({other}) does not match {a} ({first})"),
                    )
                    .map(|_| first);
            }
        }
        Some(first)
    }

    /// Requires operand `index` to have `rank`; `what` says why (`a vector of channels`).
    pub fn require_rank(&mut self, index: usize, rank: usize, what: &str) -> Option<()> {
        let actual = self.operand(index).rank();
        if actual == rank {
            return Some(());
        }
        let name = self.label(index);
        self.operand_error(
            index,
            format!("{name} must have rank {rank} ({what}), but has rank {actual}"),
        )
    }

    /// Requires operand `index` to have at least `rank` dimensions.
    pub fn require_min_rank(&mut self, index: usize, rank: usize) -> Option<()> {
        let actual = self.operand(index).rank();
        if actual >= rank {
            return Some(());
        }
        let name = self.label(index);
        self.operand_error(
            index,
            format!("{name} must have rank at least {rank}, but has rank {actual}"),
        )
    }

    /// Requires dimension `dim` of operand `a` to equal dimension `dim_b` of operand `b`.
    pub fn require_dim_match(
        &mut self,
        (a, dim_a): (usize, usize),
        (b, dim_b): (usize, usize),
        what: &str,
    ) -> Option<()> {
        let (x, y) = (self.operand(a).shape[dim_a], self.operand(b).shape[dim_b]);
        if x == y {
            return Some(());
        }
        let (na, nb) = (self.label(a), self.label(b));
        self.operand_error(
            b,
            format!(
                "{what}: {nb} dimension {dim_b} ({y}) does not match {na} dimension {dim_a} ({x})"
            ),
        )
    }

    /// Attribute `name` as an axis of a rank-`rank` tensor: negative counts from the end.
    pub fn axis(&mut self, name: &str, rank: usize) -> Option<usize> {
        let value = self.int(name);
        match normalize_axis(value, rank) {
            Some(axis) => Some(axis),
            None if rank == 0 => self
                .attr_error(
                    name,
                    format!("attribute '{name}' ({value}) names an axis, but the operand has rank 0 (no axes)"),
                )
                .map(|_| 0),
            None => self
                .attr_error(
                    name,
                    format!(
                        "attribute '{name}' ({value}) is out of range for rank {rank} (expected {} to {})",
                        -(rank as i64),
                        rank as i64 - 1
                    ),
                )
                .map(|_| 0),
        }
    }

    /// Attribute `name` as a list of distinct axes of a rank-`rank` tensor.
    pub fn axes(&mut self, name: &str, rank: usize) -> Option<Vec<usize>> {
        let values = self.int_list(name).unwrap_or_default();
        let mut axes = Vec::with_capacity(values.len());
        for value in values {
            let Some(axis) = normalize_axis(value, rank) else {
                return self
                    .attr_error(
                        name,
                        format!("attribute '{name}' has axis {value} out of range for rank {rank}"),
                    )
                    .map(|_| Vec::new());
            };
            if axes.contains(&axis) {
                return self
                    .attr_error(
                        name,
                        format!("attribute '{name}' names axis {axis} more than once"),
                    )
                    .map(|_| Vec::new());
            }
            axes.push(axis);
        }
        Some(axes)
    }

    /// Attribute `name` as a list of exactly `len` integers, each at least `min`.
    pub fn int_list_of(&mut self, name: &str, len: usize, min: i64) -> Option<Vec<i64>> {
        let values = self.int_list(name).unwrap_or_default();
        if values.len() != len {
            return self
                .attr_error(
                    name,
                    format!(
                        "attribute '{name}' must have {len} elements, but has {}",
                        values.len()
                    ),
                )
                .map(|_| Vec::new());
        }
        if let Some(bad) = values.iter().find(|&&v| v < min) {
            let what = if min == 1 { "positive" } else { "non-negative" };
            return self
                .attr_error(
                    name,
                    format!("attribute '{name}' must be {what}, but has {bad}"),
                )
                .map(|_| Vec::new());
        }
        Some(values)
    }

    /// The numpy broadcast of the shapes of operands `indices`.
    pub fn broadcast(&mut self, indices: &[usize]) -> Option<Vec<u64>> {
        let mut shape: Vec<u64> = Vec::new();
        let mut from = indices[0];
        for &i in indices {
            let other = &self.operand(i).shape;
            match broadcast_shapes(&shape, other) {
                Some(s) => shape = s,
                None => {
                    let first = TensorType::new(shape.clone(), self.operand(from).element);
                    let (nf, ni) = (self.label(from), self.label(i));
                    let message = format!(
                        "{ni} shape ({}) is not broadcast-compatible with {nf} ({})",
                        shape_text(other),
                        shape_text(&first.shape)
                    );
                    return self.operand_error(i, message).map(|_| Vec::new());
                }
            }
            if shape.len() == other.len() {
                from = i;
            }
        }
        Some(shape)
    }

    /// Checks that every dimension and the element count of `ty` fit in `i64`.
    pub fn check_extent(&mut self, ty: TensorType) -> Option<TensorType> {
        let fits = ty.shape.iter().all(|&d| d <= MAX_EXTENT)
            && ty.num_elements().is_some_and(|n| n <= MAX_EXTENT);
        if fits {
            return Some(ty);
        }
        self.error(format!(
            "result type has too many elements ({})",
            shape_text(&ty.shape)
        ))
        .map(|_| ty)
    }
}

/// Maps `axis` in `[-rank, rank)` to `[0, rank)`.
pub fn normalize_axis(axis: i64, rank: usize) -> Option<usize> {
    let rank = rank as i64;
    let normalized = if axis < 0 { axis + rank } else { axis };
    (0..rank)
        .contains(&normalized)
        .then_some(normalized as usize)
}

/// numpy broadcasting of two shapes: align on the right; each pair equal or one of them 1.
pub fn broadcast_shapes(a: &[u64], b: &[u64]) -> Option<Vec<u64>> {
    let rank = a.len().max(b.len());
    let dim = |s: &[u64], i: usize| (i + s.len()).checked_sub(rank).map_or(1, |j| s[j]);
    (0..rank)
        .map(|i| match (dim(a, i), dim(b, i)) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

/// `4x8` (or `scalar` for rank 0), for messages.
pub fn shape_text(shape: &[u64]) -> String {
    if shape.is_empty() {
        return "scalar".into();
    }
    shape
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join("x")
}

/// Why `def` may not have operands of `operand_types` or results of `results`: one of them
/// has a storage-only element type and the op computes on its elements.
pub fn storage_type_misuse(
    def: &dyn OpDef,
    operand_types: &[&TensorType],
    results: &[TensorType],
) -> Option<String> {
    if def.moves_storage_types() {
        return None;
    }
    let stored = operand_types
        .iter()
        .copied()
        .chain(results)
        .find(|t| t.element.is_storage_only())?;
    Some(format!(
        "'{}' does not compute on {} elements ({stored}): they are for storage; cast them \
         to a computing type first",
        def.schema().full_name(),
        stored.element
    ))
}

/// The result types `def`'s shape rule gives an op built in code (a decomposition, an
/// importer) with operands of `operand_types`, `attrs` and, when given, the written result
/// types `written`, all placed at `span`; or the rule's messages, joined.
pub fn infer_op(
    def: &'static dyn OpDef,
    operand_types: &[TensorType],
    attrs: &BTreeMap<String, Attribute>,
    written: Option<&[TensorType]>,
    span: Span,
) -> Result<Vec<TensorType>, String> {
    let operands: Vec<(TensorType, Span)> =
        operand_types.iter().map(|t| (t.clone(), span)).collect();
    let attrs: BTreeMap<String, (Attribute, Span)> = attrs
        .iter()
        .map(|(k, v)| (k.clone(), (v.clone(), span)))
        .collect();
    let written: Option<Vec<(TensorType, Span)>> =
        written.map(|w| w.iter().map(|t| (t.clone(), span)).collect());
    let mut diags = Vec::new();
    let inferred = {
        let mut ctx = InferContext::new(
            def.schema(),
            &operands,
            &attrs,
            written.as_deref(),
            span,
            &mut diags,
        );
        def.infer(&mut ctx)
    };
    let operand_refs: Vec<&TensorType> = operand_types.iter().collect();
    if let Some(misuse) = inferred
        .as_ref()
        .and_then(|types| storage_type_misuse(def, &operand_refs, types))
    {
        return Err(misuse);
    }
    match inferred {
        Some(types) if diags.is_empty() => Ok(types),
        _ if diags.is_empty() => Err("its shape rule rejects it".into()),
        _ => Err(diags
            .iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(broadcast_shapes(&[4, 1, 3], &[5, 1]), Some(vec![4, 5, 3]));
        assert_eq!(broadcast_shapes(&[], &[2]), Some(vec![2]));
        assert_eq!(broadcast_shapes(&[2, 3], &[4, 3]), None);
    }

    #[test]
    fn negative_axes_count_from_the_end() {
        assert_eq!(normalize_axis(-1, 3), Some(2));
        assert_eq!(normalize_axis(3, 3), None);
        assert_eq!(normalize_axis(-4, 3), None);
        assert_eq!(normalize_axis(0, 0), None);
    }
}
