//! Visiting every operation of an MLIR module (melior 0.22 has no walker), to read and set
//! attributes in place.

use melior::ir::attribute::{AttributeLike, FlatSymbolRefAttribute, StringAttribute};
use melior::ir::{Attribute, Module};
use melior::StringRef;
use mlir_sys::MlirOperation;

extern "C" {
    fn tesseraLinalgLoops(
        operation: MlirOperation,
        extents: *mut i64,
        reductions: *mut bool,
        capacity: i64,
    ) -> i64;
    fn tesseraLinalgOperandUsesLoop(
        operation: MlirOperation,
        operand: i64,
        loop_index: i64,
    ) -> bool;
    fn tesseraFunctionHash(function: MlirOperation) -> u64;
    fn tesseraFunctionsEquivalent(a: MlirOperation, b: MlirOperation) -> bool;
}

/// A value's static shape (`None` when it is not a ranked shaped value).
pub type Shape = Option<Vec<i64>>;

/// Tensor ops whose result bufferizes to a view of their first operand.
const VIEWS: &[&str] = &[
    "tensor.collapse_shape",
    "tensor.expand_shape",
    "tensor.extract_slice",
    "tensor.cast",
    "tensor.reshape",
    "tensor.bitcast",
];

/// The bytes of one element of the type `ty` (`None` when it is no shaped type of integers,
/// indices or floats; `i1` takes a byte, `index` eight).
pub fn element_bytes(ty: mlir_sys::MlirType) -> Option<u64> {
    // SAFETY: `ty` is a live type; it is only read.
    unsafe {
        if !mlir_sys::mlirTypeIsAShaped(ty) {
            return None;
        }
        let element = mlir_sys::mlirShapedTypeGetElementType(ty);
        let bits = if mlir_sys::mlirTypeIsAIndex(element) {
            64
        } else if mlir_sys::mlirTypeIsAInteger(element) {
            mlir_sys::mlirIntegerTypeGetWidth(element)
        } else if mlir_sys::mlirTypeIsAFloat(element) {
            mlir_sys::mlirFloatTypeGetWidth(element)
        } else {
            return None;
        };
        Some(u64::from(bits).div_ceil(8))
    }
}

/// The bytes of one element of `value`'s type, as [`element_bytes`] reads them.
fn value_element_bytes(value: mlir_sys::MlirValue) -> Option<i64> {
    // SAFETY: `value` is a live value of a live operation; its type is only read.
    let ty = unsafe { mlir_sys::mlirValueGetType(value) };
    element_bytes(ty).and_then(|b| i64::try_from(b).ok())
}

/// An operation met during a walk. Only attributes change through it, so the walk's order
/// stays valid.
pub struct WalkedOp<'c> {
    raw: MlirOperation,
    _context: std::marker::PhantomData<&'c ()>,
}

impl<'c> WalkedOp<'c> {
    /// The operation's name (`linalg.matmul`).
    pub fn name(&self) -> String {
        // SAFETY: `raw` is a live operation of the module being walked (see `walk`).
        let name = unsafe { mlir_sys::mlirIdentifierStr(mlir_sys::mlirOperationGetName(self.raw)) };
        // SAFETY: an identifier's string lives as long as the context.
        unsafe { StringRef::from_raw(name) }
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The attribute `name`, when present.
    pub fn attribute(&self, name: &str) -> Option<Attribute<'c>> {
        // SAFETY: as in `name`; a null attribute means absent and is not wrapped.
        unsafe {
            let raw =
                mlir_sys::mlirOperationGetAttributeByName(self.raw, StringRef::new(name).to_raw());
            (!raw.ptr.is_null()).then(|| Attribute::from_raw(raw))
        }
    }

    /// Sets attribute `name` to `value`.
    pub fn set_attribute(&self, name: &str, value: Attribute<'c>) {
        // SAFETY: as in `name`; attributes are owned by the context, which outlives 'c.
        unsafe {
            mlir_sys::mlirOperationSetAttributeByName(
                self.raw,
                StringRef::new(name).to_raw(),
                value.to_raw(),
            )
        }
    }

    /// Removes attribute `name` if present.
    pub fn remove_attribute(&self, name: &str) {
        // SAFETY: as in `name`.
        unsafe {
            mlir_sys::mlirOperationRemoveAttributeByName(self.raw, StringRef::new(name).to_raw());
        }
    }

    /// The static shape of every operand and result, in order (`None` for non-shaped values).
    pub fn shapes(&self) -> (Vec<Shape>, Vec<Shape>) {
        // SAFETY: as in `name`; values and types are read, not changed.
        unsafe {
            let shape = |value: mlir_sys::MlirValue| {
                let ty = mlir_sys::mlirValueGetType(value);
                if !mlir_sys::mlirTypeIsAShaped(ty) || !mlir_sys::mlirShapedTypeHasRank(ty) {
                    return None;
                }
                Some(
                    (0..mlir_sys::mlirShapedTypeGetRank(ty))
                        .map(|d| mlir_sys::mlirShapedTypeGetDimSize(ty, d as isize))
                        .collect(),
                )
            };
            let operands = (0..mlir_sys::mlirOperationGetNumOperands(self.raw))
                .map(|i| shape(mlir_sys::mlirOperationGetOperand(self.raw, i)))
                .collect();
            let results = (0..mlir_sys::mlirOperationGetNumResults(self.raw))
                .map(|i| shape(mlir_sys::mlirOperationGetResult(self.raw, i)))
                .collect();
            (operands, results)
        }
    }

    /// The element type of every shaped operand, in order, as MLIR prints it (`f32`).
    pub fn operand_element_types(&self) -> Vec<String> {
        // SAFETY: as in `name`; types are read, not changed, and live as long as the context.
        unsafe {
            (0..mlir_sys::mlirOperationGetNumOperands(self.raw))
                .filter_map(|i| {
                    let ty =
                        mlir_sys::mlirValueGetType(mlir_sys::mlirOperationGetOperand(self.raw, i));
                    mlir_sys::mlirTypeIsAShaped(ty).then(|| {
                        melior::ir::Type::from_raw(mlir_sys::mlirShapedTypeGetElementType(ty))
                            .to_string()
                    })
                })
                .collect()
        }
    }

    /// The one-dimensional vectors (registers' rows) an operation on vectors works on: the
    /// rows (all dimensions but the innermost) of its narrowest vector, integer or float
    /// operand or result (a scalar counting one row; buffers and indices not counted), 1 when
    /// it has none. An add of two `vector<7x16xf32>` works on 7; moving a row or an element
    /// into or out of a 2-d vector (`vector.insert`, `vector.extract`) on one.
    pub fn vector_rows(&self) -> u64 {
        // SAFETY: as in `name`; values and types are read, not changed.
        unsafe {
            let rows = |value: mlir_sys::MlirValue| {
                let ty = mlir_sys::mlirValueGetType(value);
                if mlir_sys::mlirTypeIsAFloat(ty) || mlir_sys::mlirTypeIsAInteger(ty) {
                    return Some(1);
                }
                if !mlir_sys::mlirTypeIsAVector(ty) {
                    return None;
                }
                let rank = mlir_sys::mlirShapedTypeGetRank(ty);
                Some(
                    (0..rank - 1)
                        .map(|d| mlir_sys::mlirShapedTypeGetDimSize(ty, d as isize).max(1) as u64)
                        .fold(1u64, u64::saturating_mul),
                )
            };
            let operands = (0..mlir_sys::mlirOperationGetNumOperands(self.raw))
                .filter_map(|i| rows(mlir_sys::mlirOperationGetOperand(self.raw, i)));
            let results = (0..mlir_sys::mlirOperationGetNumResults(self.raw))
                .filter_map(|i| rows(mlir_sys::mlirOperationGetResult(self.raw, i)));
            operands.chain(results).min().unwrap_or(1)
        }
    }

    /// The bytes of one element of operand `index` ([`element_bytes`] of its type).
    pub fn operand_element_bytes(&self, index: usize) -> Option<i64> {
        if index >= self.operand_count() {
            return None;
        }
        // SAFETY: as in `name`; `index` is below the operand count.
        value_element_bytes(unsafe { mlir_sys::mlirOperationGetOperand(self.raw, index as isize) })
    }

    /// The bytes of one element of result `index` ([`element_bytes`] of its type).
    pub fn result_element_bytes(&self, index: usize) -> Option<i64> {
        if index >= self.result_count() {
            return None;
        }
        // SAFETY: as in `name`; `index` is below the result count.
        value_element_bytes(unsafe { mlir_sys::mlirOperationGetResult(self.raw, index as isize) })
    }

    /// The loops of a linalg op, as its `LinalgOp` interface sees them: each one's static
    /// extent (`None` where it is dynamic or does not follow from the operands' shapes) and
    /// whether it is a reduction; `None` when it is no linalg op.
    pub fn linalg_loops(&self) -> Option<Vec<(Option<i64>, bool)>> {
        let mut extents = vec![0i64; 8];
        let mut reductions = vec![false; 8];
        loop {
            // SAFETY: as in `name`; the arrays hold `capacity` entries each, and the helper
            // writes at most that many.
            let count = unsafe {
                tesseraLinalgLoops(
                    self.raw,
                    extents.as_mut_ptr(),
                    reductions.as_mut_ptr(),
                    extents.len() as i64,
                )
            };
            let count = usize::try_from(count).ok()?;
            if count <= extents.len() {
                return Some(
                    extents[..count]
                        .iter()
                        .zip(&reductions[..count])
                        .map(|(&extent, &reduction)| ((extent >= 0).then_some(extent), reduction))
                        .collect(),
                );
            }
            extents = vec![0; count];
            reductions = vec![false; count];
        }
    }

    /// Whether the indexing map of operand `index` of a linalg op uses loop `loop`.
    pub fn operand_uses_loop(&self, index: usize, loop_index: usize) -> bool {
        // SAFETY: as in `name`; the helper checks the op, the operand and the loop.
        unsafe { tesseraLinalgOperandUsesLoop(self.raw, index as i64, loop_index as i64) }
    }

    /// Whether a `linalg.generic` has a reduction loop (`None` for any other op).
    pub fn generic_reduces(&self) -> Option<bool> {
        if self.name() != "linalg.generic" {
            return None;
        }
        let loops = self.linalg_loops()?;
        Some(loops.iter().any(|&(_, reduction)| reduction))
    }

    /// The value of string attribute `name` (a symbol's name, its visibility), when present.
    pub fn string_attribute(&self, name: &str) -> Option<String> {
        let attribute = self.attribute(name)?;
        StringAttribute::try_from(attribute)
            .ok()
            .map(|s| s.value().to_string())
    }

    /// The symbol a `func.call` calls.
    pub fn callee(&self) -> Option<String> {
        self.symbol_attribute("callee")
    }

    /// The symbol that attribute `name` refers to, when it is a flat symbol reference.
    pub fn symbol_attribute(&self, name: &str) -> Option<String> {
        let attribute = self.attribute(name)?;
        FlatSymbolRefAttribute::try_from(attribute)
            .ok()
            .map(|s| s.value().to_string())
    }

    /// A hash of a function but for its name: functions that are the same but for their names
    /// (`same_function_as`) have the same one.
    pub fn function_hash(&self) -> u64 {
        // SAFETY: as in `name`; the helper only reads the operation.
        unsafe { tesseraFunctionHash(self.raw) }
    }

    /// Whether this function and `other` are the same but for their names (attributes and
    /// bodies, locations aside).
    pub fn same_function_as(&self, other: &WalkedOp<'c>) -> bool {
        // SAFETY: as in `name`, for both operations; the helper only reads them.
        unsafe { tesseraFunctionsEquivalent(self.raw, other.raw) }
    }

    /// Another handle on an operation met in the same walk (from `raw`).
    pub(crate) fn from_raw(raw: MlirOperation) -> WalkedOp<'c> {
        WalkedOp {
            raw,
            _context: std::marker::PhantomData,
        }
    }

    /// The raw handle, for C API calls that take the operation itself.
    pub fn raw(&self) -> MlirOperation {
        self.raw
    }

    /// Whether an operand or result is a tensor or memref of `i1`. LLVM stores vectors of
    /// `i1` as packed bits, while memrefs hold one byte per `i1`, so such ops stay scalar.
    pub fn touches_i1(&self) -> bool {
        // SAFETY: `element` is the element type of a live shaped type.
        self.touches_elements(|element| unsafe {
            mlir_sys::mlirTypeIsAInteger(element) && mlir_sys::mlirIntegerTypeGetWidth(element) == 1
        })
    }

    /// Whether an operand or result is a tensor, memref or vector of `bf16`.
    pub fn touches_bf16(&self) -> bool {
        // SAFETY: `element` is the element type of a live shaped type.
        self.touches_elements(|element| unsafe { mlir_sys::mlirTypeIsABF16(element) })
    }

    /// Whether the operation's first region has a block (a function with a body, not a
    /// declaration).
    pub fn has_body(&self) -> bool {
        // SAFETY: as in `name`; the region and its block list are read, not changed.
        unsafe {
            mlir_sys::mlirOperationGetNumRegions(self.raw) > 0
                && !mlir_sys::mlirRegionGetFirstBlock(mlir_sys::mlirOperationGetRegion(self.raw, 0))
                    .ptr
                    .is_null()
        }
    }

    /// Whether an operand or result is a tensor (the op is not bufferized).
    pub fn touches_tensors(&self) -> bool {
        // SAFETY: as in `name`; values and types are read, not changed.
        unsafe {
            let tensor = |value: mlir_sys::MlirValue| {
                mlir_sys::mlirTypeIsATensor(mlir_sys::mlirValueGetType(value))
            };
            (0..mlir_sys::mlirOperationGetNumOperands(self.raw))
                .any(|i| tensor(mlir_sys::mlirOperationGetOperand(self.raw, i)))
                || (0..mlir_sys::mlirOperationGetNumResults(self.raw))
                    .any(|i| tensor(mlir_sys::mlirOperationGetResult(self.raw, i)))
        }
    }

    /// Whether an operand or result is shaped with elements of which `is` holds.
    fn touches_elements(&self, is: impl Fn(mlir_sys::MlirType) -> bool) -> bool {
        // SAFETY: as in `name`; values and types are read, not changed.
        unsafe {
            let shaped_of = |value: mlir_sys::MlirValue| {
                let ty = mlir_sys::mlirValueGetType(value);
                mlir_sys::mlirTypeIsAShaped(ty) && is(mlir_sys::mlirShapedTypeGetElementType(ty))
            };
            (0..mlir_sys::mlirOperationGetNumOperands(self.raw))
                .any(|i| shaped_of(mlir_sys::mlirOperationGetOperand(self.raw, i)))
                || (0..mlir_sys::mlirOperationGetNumResults(self.raw))
                    .any(|i| shaped_of(mlir_sys::mlirOperationGetResult(self.raw, i)))
        }
    }

    /// The operands that are a block argument or the same value as an earlier operand, or a
    /// view of one (through reshapes, slices and casts, which bufferize to views of their
    /// source): for a `func.return`, the results that alias a parameter or another result.
    pub fn aliased_operands(&self) -> Vec<usize> {
        // SAFETY: as in `name`; values and their defining operations are read, not changed.
        unsafe {
            let root = |mut value: mlir_sys::MlirValue| loop {
                if !mlir_sys::mlirValueIsAOpResult(value) {
                    return value;
                }
                let producer = WalkedOp::from_raw(mlir_sys::mlirOpResultGetOwner(value));
                if !VIEWS.contains(&producer.name().as_str()) {
                    return value;
                }
                value = mlir_sys::mlirOperationGetOperand(producer.raw, 0);
            };
            let roots: Vec<mlir_sys::MlirValue> =
                (0..mlir_sys::mlirOperationGetNumOperands(self.raw))
                    .map(|i| root(mlir_sys::mlirOperationGetOperand(self.raw, i)))
                    .collect();
            (0..roots.len())
                .filter(|&i| {
                    let v = roots[i];
                    mlir_sys::mlirValueIsABlockArgument(v)
                        || roots[..i].iter().any(|&w| mlir_sys::mlirValueEqual(v, w))
                })
                .collect()
        }
    }

    /// Whether every memref this `func.func` takes has a static shape and a strided layout
    /// with static strides and offset: everything about it but its address is in its type.
    pub fn takes_static_memrefs(&self) -> bool {
        // SAFETY: as in `name`; the entry block's argument types are read, not changed, and
        // the strides buffer holds one entry per dimension of the ranked memref.
        unsafe {
            let region = mlir_sys::mlirOperationGetRegion(self.raw, 0);
            let entry = mlir_sys::mlirRegionGetFirstBlock(region);
            if entry.ptr.is_null() {
                return false;
            }
            (0..mlir_sys::mlirBlockGetNumArguments(entry)).all(|position| {
                let ty =
                    mlir_sys::mlirValueGetType(mlir_sys::mlirBlockGetArgument(entry, position));
                if !mlir_sys::mlirTypeIsAMemRef(ty) {
                    return !mlir_sys::mlirTypeIsAUnrankedMemRef(ty);
                }
                if !mlir_sys::mlirShapedTypeHasStaticShape(ty) {
                    return false;
                }
                let rank = mlir_sys::mlirShapedTypeGetRank(ty).max(0) as usize;
                let mut strides = vec![0i64; rank.max(1)];
                let mut offset = 0i64;
                let strided = mlir_sys::mlirMemRefTypeGetStridesAndOffset(
                    ty,
                    strides.as_mut_ptr(),
                    &mut offset,
                );
                let dynamic = mlir_sys::mlirShapedTypeGetDynamicStrideOrOffset();
                strided.value != 0
                    && offset != dynamic
                    && strides[..rank].iter().all(|&s| s != dynamic)
            })
        }
    }

    /// Sets attribute `name` to `value` on every argument of this `func.func`.
    pub fn set_argument_attributes(&self, name: &str, value: Attribute<'c>) {
        // SAFETY: as in `name`; `mlirFuncSetArgAttr` updates the function's argument attribute
        // dictionaries (attributes are owned by the context); the position is in range.
        unsafe {
            let region = mlir_sys::mlirOperationGetRegion(self.raw, 0);
            let entry = mlir_sys::mlirRegionGetFirstBlock(region);
            if entry.ptr.is_null() {
                return;
            }
            for position in 0..mlir_sys::mlirBlockGetNumArguments(entry) {
                mlir_sys::mlirFuncSetArgAttr(
                    self.raw,
                    position,
                    StringRef::new(name).to_raw(),
                    value.to_raw(),
                );
            }
        }
    }

    /// Replaces operand `index` (a ranked tensor) by a copy of it in a new tensor, made right
    /// before this operation by `bufferization.alloc_tensor() copy(...)`, which bufferizes to
    /// its own buffer. Call it outside a walk: it changes the IR.
    pub fn copy_operand(&self, index: usize) {
        // SAFETY: the new operation is built from a state that lives across the calls, with
        // the operand's value and type and this operation's location; its segment sizes
        // attribute is parsed in this operation's context. The block takes ownership of it
        // when it is inserted before this operation, which then uses its result.
        unsafe {
            let value = mlir_sys::mlirOperationGetOperand(self.raw, index as isize);
            let ty = mlir_sys::mlirValueGetType(value);
            let context = mlir_sys::mlirOperationGetContext(self.raw);
            let mut state = mlir_sys::mlirOperationStateGet(
                StringRef::new("bufferization.alloc_tensor").to_raw(),
                mlir_sys::mlirOperationGetLocation(self.raw),
            );
            mlir_sys::mlirOperationStateAddOperands(&mut state, 1, &value);
            mlir_sys::mlirOperationStateAddResults(&mut state, 1, &ty);
            let segments = mlir_sys::mlirAttributeParseGet(
                context,
                StringRef::new("array<i32: 0, 1, 0>").to_raw(),
            );
            let named = mlir_sys::mlirNamedAttributeGet(
                mlir_sys::mlirIdentifierGet(
                    context,
                    StringRef::new("operandSegmentSizes").to_raw(),
                ),
                segments,
            );
            mlir_sys::mlirOperationStateAddAttributes(&mut state, 1, &named);
            let copy = mlir_sys::mlirOperationCreate(&mut state);
            let block = mlir_sys::mlirOperationGetBlock(self.raw);
            mlir_sys::mlirBlockInsertOwnedOperationBefore(block, self.raw, copy);
            mlir_sys::mlirOperationSetOperand(
                self.raw,
                index as isize,
                mlir_sys::mlirOperationGetResult(copy, 0),
            );
        }
    }

    /// The only operation using result 0, when there is exactly one use.
    pub fn sole_user(&self) -> Option<WalkedOp<'c>> {
        // SAFETY: as in `name`; use lists are read, not changed.
        unsafe {
            if mlir_sys::mlirOperationGetNumResults(self.raw) == 0 {
                return None;
            }
            let first =
                mlir_sys::mlirValueGetFirstUse(mlir_sys::mlirOperationGetResult(self.raw, 0));
            if first.ptr.is_null() || !mlir_sys::mlirOpOperandGetNextUse(first).ptr.is_null() {
                return None;
            }
            Some(WalkedOp {
                raw: mlir_sys::mlirOpOperandGetOwner(first),
                _context: std::marker::PhantomData,
            })
        }
    }

    /// Whether every operand is defined outside `ancestor` (none is a result or block argument
    /// of an operation nested in it), i.e. whether this operation is invariant in it.
    pub fn operands_defined_outside(&self, ancestor: &WalkedOp<'c>) -> bool {
        // SAFETY: as in `name`; values, blocks and parents are read, not changed.
        unsafe {
            let inside = |mut op: MlirOperation| {
                while !op.ptr.is_null() {
                    if op.ptr == ancestor.raw.ptr {
                        return true;
                    }
                    op = mlir_sys::mlirOperationGetParentOperation(op);
                }
                false
            };
            (0..mlir_sys::mlirOperationGetNumOperands(self.raw)).all(|i| {
                let value = mlir_sys::mlirOperationGetOperand(self.raw, i);
                let owner = if mlir_sys::mlirValueIsAOpResult(value) {
                    mlir_sys::mlirOpResultGetOwner(value)
                } else {
                    let block = mlir_sys::mlirBlockArgumentGetOwner(value);
                    mlir_sys::mlirBlockGetParentOperation(block)
                };
                !inside(owner)
            })
        }
    }

    /// The operation defining operand `index`, when it is an operation's result.
    pub fn operand_producer(&self, index: usize) -> Option<WalkedOp<'c>> {
        // SAFETY: as in `name`; values are read, not changed.
        unsafe {
            if index as isize >= mlir_sys::mlirOperationGetNumOperands(self.raw) {
                return None;
            }
            let value = mlir_sys::mlirOperationGetOperand(self.raw, index as isize);
            mlir_sys::mlirValueIsAOpResult(value).then(|| WalkedOp {
                raw: mlir_sys::mlirOpResultGetOwner(value),
                _context: std::marker::PhantomData,
            })
        }
    }

    /// An identity of the value operand `index` reads, equal for operands reading the same
    /// value, when that value is a block argument (a function parameter, for top-level ops).
    pub fn operand_argument(&self, index: usize) -> Option<usize> {
        // SAFETY: as in `name`; values are read, not changed.
        unsafe {
            if index as isize >= mlir_sys::mlirOperationGetNumOperands(self.raw) {
                return None;
            }
            let value = mlir_sys::mlirOperationGetOperand(self.raw, index as isize);
            mlir_sys::mlirValueIsABlockArgument(value).then_some(value.ptr as usize)
        }
    }

    /// The position, in its block, of the block argument operand `index` reads, if it reads
    /// one (a `linalg.generic` body's operand: the op's operand at that position).
    pub fn operand_argument_number(&self, index: usize) -> Option<usize> {
        // SAFETY: as in `name`; values are read, not changed, and only a block argument's
        // number is asked for.
        unsafe {
            if index as isize >= mlir_sys::mlirOperationGetNumOperands(self.raw) {
                return None;
            }
            let value = mlir_sys::mlirOperationGetOperand(self.raw, index as isize);
            mlir_sys::mlirValueIsABlockArgument(value)
                .then(|| mlir_sys::mlirBlockArgumentGetArgNumber(value) as usize)
        }
    }

    /// How many uses result 0 has.
    pub fn use_count(&self) -> usize {
        // SAFETY: as in `name`; use lists are read, not changed.
        unsafe {
            if mlir_sys::mlirOperationGetNumResults(self.raw) == 0 {
                return 0;
            }
            let mut count = 0;
            let mut operand =
                mlir_sys::mlirValueGetFirstUse(mlir_sys::mlirOperationGetResult(self.raw, 0));
            while !operand.ptr.is_null() {
                count += 1;
                operand = mlir_sys::mlirOpOperandGetNextUse(operand);
            }
            count
        }
    }

    /// The operation's location as MLIR prints it (`loc("%h"("m.tsr":4:3))`).
    pub fn location(&self) -> String {
        // SAFETY: as in `name`.
        unsafe { melior::ir::Location::from_raw(mlir_sys::mlirOperationGetLocation(self.raw)) }
            .to_string()
    }

    /// The operation that contains this one, when it is not a top-level operation.
    pub fn parent(&self) -> Option<WalkedOp<'c>> {
        // SAFETY: as in `name`.
        unsafe {
            let parent = mlir_sys::mlirOperationGetParentOperation(self.raw);
            (!parent.ptr.is_null()).then_some(WalkedOp::from_raw(parent))
        }
    }

    /// The operations using result 0, one entry per use (so a user appears once per operand
    /// it takes the result in), with the operand's position.
    pub fn uses(&self) -> Vec<(WalkedOp<'c>, usize)> {
        // SAFETY: as in `name`; use lists are read, not changed.
        unsafe {
            let mut uses = Vec::new();
            if mlir_sys::mlirOperationGetNumResults(self.raw) == 0 {
                return uses;
            }
            let mut operand =
                mlir_sys::mlirValueGetFirstUse(mlir_sys::mlirOperationGetResult(self.raw, 0));
            while !operand.ptr.is_null() {
                let owner = WalkedOp::from_raw(mlir_sys::mlirOpOperandGetOwner(operand));
                uses.push((
                    owner,
                    mlir_sys::mlirOpOperandGetOperandNumber(operand) as usize,
                ));
                operand = mlir_sys::mlirOpOperandGetNextUse(operand);
            }
            uses
        }
    }

    /// Gives `user` its own copy of this operation, placed just before it, and makes its
    /// operand `position` read that copy. Call it outside a walk: it changes the IR.
    pub fn clone_for(&self, user: &WalkedOp<'c>, position: usize) {
        // SAFETY: both operations live in the same module; the clone is owned by the caller
        // until it is inserted into the user's block right before the user, which then reads
        // its result instead of this operation's (same type).
        unsafe {
            let clone = mlir_sys::mlirOperationClone(self.raw);
            let block = mlir_sys::mlirOperationGetBlock(user.raw);
            mlir_sys::mlirBlockInsertOwnedOperationBefore(block, user.raw, clone);
            mlir_sys::mlirOperationSetOperand(
                user.raw,
                position as isize,
                mlir_sys::mlirOperationGetResult(clone, 0),
            );
        }
    }

    /// Moves this operation to just before `other`, in `other`'s block. Call it outside a
    /// walk: it changes the IR.
    pub fn move_before(&self, other: &WalkedOp<'c>) {
        // SAFETY: both operations live in the same module; moving unlinks this operation
        // from its block and links it into `other`'s, so it stays owned by the module.
        unsafe { mlir_sys::mlirOperationMoveBefore(self.raw, other.raw) }
    }

    /// Adds a use of result 0 right after this operation: an operation named `name`, of no
    /// dialect, which rewrites cannot see through or erase (it may have any effect). The
    /// context must allow unregistered dialects while it exists; [`WalkedOp::erase`] removes it.
    pub fn pin_result(&self, name: &str) {
        // SAFETY: the new operation is built from a state that lives across the calls, with
        // one operand (this operation's result) and this operation's location; the block takes
        // ownership of it when it is inserted after this operation, in this operation's block.
        unsafe {
            let mut state = mlir_sys::mlirOperationStateGet(
                StringRef::new(name).to_raw(),
                mlir_sys::mlirOperationGetLocation(self.raw),
            );
            let result = mlir_sys::mlirOperationGetResult(self.raw, 0);
            mlir_sys::mlirOperationStateAddOperands(&mut state, 1, &result);
            let pin = mlir_sys::mlirOperationCreate(&mut state);
            let block = mlir_sys::mlirOperationGetBlock(self.raw);
            mlir_sys::mlirBlockInsertOwnedOperationAfter(block, self.raw, pin);
        }
    }

    /// The operation in MLIR's textual form (without locations), its values numbered within
    /// it alone (MLIR would otherwise number the whole module for every operation printed);
    /// `None` when it does not print.
    pub fn text(&self) -> Option<String> {
        let flags = melior::ir::operation::OperationPrintingFlags::new().use_local_scope();
        // SAFETY: the handle is a live operation of the module; printing only reads it.
        unsafe { melior::ir::OperationRef::from_raw(self.raw) }
            .to_string_with_flags(flags)
            .ok()
    }

    /// Removes this operation, which must have no results in use. Call it outside a walk.
    pub fn erase(&self) {
        // SAFETY: the operation is owned by its block; destroying it unlinks it first, and
        // nothing uses its results.
        unsafe { mlir_sys::mlirOperationDestroy(self.raw) }
    }

    /// The operations nested in this one's regions, at any depth.
    pub fn nested_ops(&self) -> Vec<WalkedOp<'c>> {
        let mut nested = Vec::new();
        let mut pending = vec![self.raw];
        // SAFETY: as in `walk`: lists are read, not changed.
        unsafe {
            while let Some(op) = pending.pop() {
                for r in 0..mlir_sys::mlirOperationGetNumRegions(op) {
                    let mut block =
                        mlir_sys::mlirRegionGetFirstBlock(mlir_sys::mlirOperationGetRegion(op, r));
                    while !block.ptr.is_null() {
                        let mut child = mlir_sys::mlirBlockGetFirstOperation(block);
                        while !child.ptr.is_null() {
                            nested.push(WalkedOp::from_raw(child));
                            pending.push(child);
                            child = mlir_sys::mlirOperationGetNextInBlock(child);
                        }
                        block = mlir_sys::mlirBlockGetNextInRegion(block);
                    }
                }
            }
        }
        nested
    }

    /// The number of operands.
    pub fn operand_count(&self) -> usize {
        // SAFETY: as in `name`.
        unsafe { mlir_sys::mlirOperationGetNumOperands(self.raw) as usize }
    }

    /// The number of results.
    pub fn result_count(&self) -> usize {
        // SAFETY: as in `name`.
        unsafe { mlir_sys::mlirOperationGetNumResults(self.raw) as usize }
    }
}

/// Calls `visit` on each operation of `module`'s body (its functions, globals), not on what
/// they hold.
pub fn walk_top_level<'c>(module: &Module<'c>, mut visit: impl FnMut(&WalkedOp<'c>)) {
    // SAFETY: as in `walk`: the module's body is read while the module is alive, and the
    // next operation is taken before `visit` runs (which may only touch attributes).
    unsafe {
        let mut op = mlir_sys::mlirBlockGetFirstOperation(module.body().to_raw());
        while !op.ptr.is_null() {
            let next = mlir_sys::mlirOperationGetNextInBlock(op);
            visit(&WalkedOp::from_raw(op));
            op = next;
        }
    }
}

/// Calls `visit` on every operation nested in `module`, parents before children.
pub fn walk<'c>(module: &Module<'c>, mut visit: impl FnMut(&WalkedOp<'c>)) {
    let root = module.as_operation().to_raw();
    let mut pending = vec![root];
    while let Some(op) = pending.pop() {
        let walked = WalkedOp {
            raw: op,
            _context: std::marker::PhantomData,
        };
        if op.ptr != root.ptr {
            visit(&walked);
        }
        // SAFETY: every handle comes from the module's own region/block/operation lists,
        // read while the module is alive and its structure is not changed (visitors only
        // touch attributes).
        unsafe {
            let mut children = Vec::new();
            for r in 0..mlir_sys::mlirOperationGetNumRegions(op) {
                let region = mlir_sys::mlirOperationGetRegion(op, r);
                let mut block = mlir_sys::mlirRegionGetFirstBlock(region);
                while !block.ptr.is_null() {
                    let mut child = mlir_sys::mlirBlockGetFirstOperation(block);
                    while !child.ptr.is_null() {
                        children.push(child);
                        child = mlir_sys::mlirOperationGetNextInBlock(child);
                    }
                    block = mlir_sys::mlirBlockGetNextInRegion(block);
                }
            }
            pending.extend(children.into_iter().rev());
        }
    }
}
