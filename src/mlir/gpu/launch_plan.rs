//! The host side of a module lowered for the GPU, read as data: for each function, the
//! buffers it uses (its parameters, the temporaries it allocates, the constants it reads),
//! the views of them its kernels take (offset, sizes and strides, from the memref types), and
//! its kernel launches in order (kernel, grid, block, arguments). The runtime needs nothing
//! else to run the function, and nothing of MLIR: MLIR 19's own host lowering would reload the
//! module at every launch through wrappers Debian does not ship, so tessera reads what the
//! host would do and does it through the CUDA driver itself (src/mlir/gpu/runtime/).

use crate::mlir::bridge::walk::{element_bytes, walk_top_level, WalkedOp};
use crate::mlir::gpu::ptx::kernel_ptx;
use half::{bf16, f16};
use melior::ir::attribute::AttributeLike;
use melior::ir::{Module, TypeLike};
use mlir_sys::{MlirAttribute, MlirOperation, MlirType, MlirValue};
use std::collections::HashMap;

/// What a function's buffers hold.
#[derive(Clone, Debug, PartialEq)]
pub enum Buffer {
    /// Parameter `n` of the function (an input, or a result's out-parameter).
    Parameter(usize),
    /// A temporary of this many bytes, which the function allocates.
    Temporary(u64),
    /// A constant (a `memref.global`), these bytes.
    Constant(Vec<u8>),
}

/// A memref a kernel takes: a buffer, seen with an element offset, sizes and strides.
#[derive(Clone, Debug, PartialEq)]
pub struct View {
    /// The buffer (an index into [`FunctionPlan::buffers`]).
    pub buffer: usize,
    /// The offset of its first element, in elements.
    pub offset: i64,
    /// Its sizes.
    pub sizes: Vec<i64>,
    /// Its strides, in elements.
    pub strides: Vec<i64>,
}

/// A launch argument.
#[derive(Clone, Debug, PartialEq)]
pub enum Argument {
    /// A memref (an index into [`FunctionPlan::views`]).
    View(usize),
    /// A scalar: its bytes, little-endian, in its type (4 for f32 and i32, 8 for f64, i64 and
    /// index, 2 for f16 and bf16, 1 for i1 and i8).
    Scalar(Vec<u8>),
}

/// A kernel launch.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    /// The kernel's name in the PTX.
    pub kernel: String,
    /// Blocks along x, y and z.
    pub grid: [u32; 3],
    /// Threads per block along x, y and z.
    pub block: [u32; 3],
    /// The arguments, in order.
    pub arguments: Vec<Argument>,
    /// Where its work comes from (the `.tsr` op's location, as MLIR prints it).
    pub origin: String,
}

/// One function's host side.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionPlan {
    /// The function's name.
    pub name: String,
    /// Its parameters' views (one per parameter, in order: inputs, then out-parameters).
    pub parameters: Vec<usize>,
    /// Every buffer it uses.
    pub buffers: Vec<Buffer>,
    /// Every view its launches take.
    pub views: Vec<View>,
    /// Its launches, in order.
    pub launches: Vec<Launch>,
}

/// A module's kernels (one PTX text) and the host side of each function.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchPlan {
    /// The PTX of every kernel.
    pub ptx: String,
    /// The functions.
    pub functions: Vec<FunctionPlan>,
}

impl Launch {
    /// The kernel's parameters, each as its bytes, where buffer `b` of `plan` is at device
    /// address `addresses[b]`: a view becomes the fields of a memref descriptor (allocated
    /// pointer, aligned pointer, offset, sizes, strides; 8 bytes each), a scalar its bytes.
    pub fn parameters(&self, plan: &FunctionPlan, addresses: &[u64]) -> Vec<Vec<u8>> {
        let mut parameters = Vec::new();
        for argument in &self.arguments {
            match argument {
                Argument::Scalar(bytes) => parameters.push(bytes.clone()),
                Argument::View(v) => {
                    let view = &plan.views[*v];
                    let address = addresses[view.buffer];
                    parameters.push(address.to_le_bytes().to_vec());
                    parameters.push(address.to_le_bytes().to_vec());
                    parameters.push(view.offset.to_le_bytes().to_vec());
                    for &size in &view.sizes {
                        parameters.push(size.to_le_bytes().to_vec());
                    }
                    for &stride in &view.strides {
                        parameters.push(stride.to_le_bytes().to_vec());
                    }
                }
            }
        }
        parameters
    }
}

/// What an SSA value of a host function is, as the plan reads it.
#[derive(Clone, Debug)]
enum Known {
    /// A memref: a view.
    View(usize),
    /// A constant scalar: its bytes, and its value when it is an integer (grid sizes).
    Scalar(Vec<u8>, Option<i64>),
}

/// The launch plan of `module`, lowered for the GPU (`tessera-lower-to-nvvm`): `Err` names
/// what its host side does that the runtime cannot (which a module tessera's stages made
/// never does).
pub fn launch_plan(module: &Module<'_>) -> Result<LaunchPlan, String> {
    let ptx = kernel_ptx(module).unwrap_or_default();
    let mut globals: HashMap<String, WalkedOp<'_>> = HashMap::new();
    let mut functions = Vec::new();
    walk_top_level(module, |op| match op.name().as_str() {
        "memref.global" => {
            if let Some(name) = op.string_attribute("sym_name") {
                globals.insert(name, WalkedOp::from_raw(op.raw()));
            }
        }
        "func.func" if op.has_body() => functions.push(WalkedOp::from_raw(op.raw())),
        _ => {}
    });
    let functions = functions
        .iter()
        .map(|f| function_plan(f, &globals))
        .collect::<Result<_, _>>()?;
    Ok(LaunchPlan { ptx, functions })
}

/// The plan of one host function.
fn function_plan(
    function: &WalkedOp<'_>,
    globals: &HashMap<String, WalkedOp<'_>>,
) -> Result<FunctionPlan, String> {
    let name = function.string_attribute("sym_name").unwrap_or_default();
    let mut plan = FunctionPlan {
        name: name.clone(),
        parameters: Vec::new(),
        buffers: Vec::new(),
        views: Vec::new(),
        launches: Vec::new(),
    };
    let mut known: HashMap<usize, Known> = HashMap::new();
    let (arguments, body) = entry_block(function.raw());
    for (index, argument) in arguments.into_iter().enumerate() {
        let view = memref_view(value_type(argument), plan.buffers.len())
            .ok_or_else(|| format!("@{name}: parameter {index} is not a memref of static shape"))?;
        plan.buffers.push(Buffer::Parameter(index));
        plan.views.push(view);
        plan.parameters.push(plan.views.len() - 1);
        known.insert(argument.ptr as usize, Known::View(plan.views.len() - 1));
    }
    for op in body {
        let op = WalkedOp::from_raw(op);
        let kind = op.name();
        let result = || result_value(op.raw(), 0);
        let operand_view = |index: usize| -> Result<usize, String> {
            match known.get(&(operand_value(op.raw(), index).ptr as usize)) {
                Some(Known::View(v)) => Ok(*v),
                _ => Err(format!(
                    "@{name}: '{kind}' at {} views a memref the plan does not know",
                    op.location()
                )),
            }
        };
        match kind.as_str() {
            "arith.constant" => {
                let scalar = constant_scalar(&op).ok_or_else(|| {
                    format!(
                        "@{name}: a constant of a type kernels do not take at {}",
                        op.location()
                    )
                })?;
                known.insert(result().ptr as usize, scalar);
            }
            "memref.alloc" | "memref.get_global" => {
                let ty = value_type(result());
                let buffer = if kind == "memref.alloc" {
                    Buffer::Temporary(type_bytes(ty).ok_or_else(|| {
                        format!(
                            "@{name}: an allocation of dynamic size at {}",
                            op.location()
                        )
                    })?)
                } else {
                    let global = op
                        .attribute("name")
                        .map(|a| a.to_string().trim_start_matches('@').to_string())
                        .and_then(|g| globals.get(&g))
                        .ok_or_else(|| {
                            format!(
                                "@{name}: a global the module does not define at {}",
                                op.location()
                            )
                        })?;
                    Buffer::Constant(global_bytes(global, ty).ok_or_else(|| {
                        format!(
                            "@{name}: a global without a dense value at {}",
                            op.location()
                        )
                    })?)
                };
                plan.buffers.push(buffer);
                let view = memref_view(ty, plan.buffers.len() - 1).ok_or_else(|| {
                    format!("@{name}: a buffer of dynamic shape at {}", op.location())
                })?;
                plan.views.push(view);
                known.insert(result().ptr as usize, Known::View(plan.views.len() - 1));
            }
            "memref.subview"
            | "memref.expand_shape"
            | "memref.collapse_shape"
            | "memref.reinterpret_cast"
            | "memref.cast" => {
                let source = operand_view(0)?;
                let view = memref_view(value_type(result()), plan.views[source].buffer)
                    .ok_or_else(|| {
                        format!("@{name}: a view of dynamic layout at {}", op.location())
                    })?;
                plan.views.push(view);
                known.insert(result().ptr as usize, Known::View(plan.views.len() - 1));
            }
            "gpu.launch_func" => {
                let launch = launch(&op, &known)
                    .map_err(|e| format!("@{name}: {e} at {}", op.location()))?;
                plan.launches.push(launch);
            }
            "memref.dealloc" | "func.return" => {}
            other => {
                return Err(format!(
                    "@{name}: the host side does '{other}' at {}, which the GPU runtime cannot run",
                    op.location()
                ))
            }
        }
    }
    Ok(plan)
}

/// The launch `op` (a `gpu.launch_func`) describes, its operands read through `known`.
fn launch(op: &WalkedOp<'_>, known: &HashMap<usize, Known>) -> Result<Launch, String> {
    let kernel = op
        .attribute("kernel")
        .map(|k| k.to_string())
        .and_then(|k| {
            k.rsplit("::@")
                .next()
                .map(|s| s.trim_start_matches('@').to_string())
        })
        .ok_or("a launch without a kernel")?;
    let segments = op
        .attribute("operandSegmentSizes")
        .and_then(|a| melior::ir::attribute::DenseI32ArrayAttribute::try_from(a).ok())
        .map(|a| {
            (0..a.len())
                .filter_map(|i| a.element(i).ok())
                .collect::<Vec<i32>>()
        })
        .ok_or("a launch without operand segments")?;
    // asyncDependencies, grid x y z, block x y z, cluster x y z, dynamic shared memory,
    // kernel operands, async object.
    if segments.len() < 12 || segments[0] != 0 || segments[7..11].iter().any(|&s| s != 0) {
        return Err("a launch with async dependencies, clusters or dynamic shared memory".into());
    }
    let value = |index: usize| known.get(&(operand_value(op.raw(), index).ptr as usize));
    let size = |index: usize| match value(index) {
        Some(Known::Scalar(_, Some(n))) if (1..=i64::from(u32::MAX)).contains(n) => Ok(*n as u32),
        _ => Err("a launch whose grid or block size is not a positive constant"),
    };
    let grid = [size(0)?, size(1)?, size(2)?];
    let block = [size(3)?, size(4)?, size(5)?];
    let first = segments[..11].iter().map(|&s| s as usize).sum::<usize>();
    let arguments = (first..first + segments[11] as usize)
        .map(|index| match value(index) {
            Some(Known::View(v)) => Ok(Argument::View(*v)),
            Some(Known::Scalar(bytes, _)) => Ok(Argument::Scalar(bytes.clone())),
            None => Err(format!(
                "kernel argument {} is not a buffer or a constant",
                index - first
            )),
        })
        .collect::<Result<_, _>>()?;
    Ok(Launch {
        kernel,
        grid,
        block,
        arguments,
        origin: op.location(),
    })
}

/// The scalar an `arith.constant` makes, as bytes of its type (and its value if an integer).
fn constant_scalar(op: &WalkedOp<'_>) -> Option<Known> {
    let value = op.attribute("value")?;
    let ty = value.r#type();
    let raw = value.to_raw();
    // SAFETY: the attribute and its type are live in the op's context; they are only read.
    unsafe {
        if mlir_sys::mlirAttributeIsAInteger(raw) {
            let n = mlir_sys::mlirIntegerAttrGetValueInt(raw);
            let width = if mlir_sys::mlirTypeIsAIndex(ty.to_raw()) {
                8
            } else {
                (mlir_sys::mlirIntegerTypeGetWidth(ty.to_raw()) as usize).div_ceil(8)
            };
            return Some(Known::Scalar(n.to_le_bytes()[..width].to_vec(), Some(n)));
        }
        if mlir_sys::mlirAttributeIsAFloat(raw) {
            let x = mlir_sys::mlirFloatAttrGetValueDouble(raw);
            let bytes = if mlir_sys::mlirTypeIsAF32(ty.to_raw()) {
                (x as f32).to_le_bytes().to_vec()
            } else if mlir_sys::mlirTypeIsAF64(ty.to_raw()) {
                x.to_le_bytes().to_vec()
            } else if mlir_sys::mlirTypeIsAF16(ty.to_raw()) {
                f16::from_f64(x).to_le_bytes().to_vec()
            } else if mlir_sys::mlirTypeIsABF16(ty.to_raw()) {
                bf16::from_f64(x).to_le_bytes().to_vec()
            } else {
                return None;
            };
            return Some(Known::Scalar(bytes, None));
        }
    }
    None
}

/// The arguments and the operations of the entry block of `function`.
fn entry_block(function: MlirOperation) -> (Vec<MlirValue>, Vec<MlirOperation>) {
    // SAFETY: `function` is a live func.func with a body; its region, block, arguments and
    // operations are read, not changed.
    unsafe {
        let region = mlir_sys::mlirOperationGetRegion(function, 0);
        let block = mlir_sys::mlirRegionGetFirstBlock(region);
        let arguments = (0..mlir_sys::mlirBlockGetNumArguments(block))
            .map(|i| mlir_sys::mlirBlockGetArgument(block, i))
            .collect();
        let mut operations = Vec::new();
        let mut op = mlir_sys::mlirBlockGetFirstOperation(block);
        while !op.ptr.is_null() {
            operations.push(op);
            op = mlir_sys::mlirOperationGetNextInBlock(op);
        }
        (arguments, operations)
    }
}

/// Operand `index` of `op`.
fn operand_value(op: MlirOperation, index: usize) -> MlirValue {
    // SAFETY: `op` is live; callers ask for operands it has (a launch's segments, a view's
    // source); an index past them gives a null value, which no known value matches.
    unsafe {
        if index as isize >= mlir_sys::mlirOperationGetNumOperands(op) {
            return MlirValue {
                ptr: std::ptr::null(),
            };
        }
        mlir_sys::mlirOperationGetOperand(op, index as isize)
    }
}

/// Result `index` of `op`.
fn result_value(op: MlirOperation, index: usize) -> MlirValue {
    // SAFETY: `op` is live; an index past its results gives a null value, whose type is never
    // read (the ops asked have a result).
    unsafe {
        if index as isize >= mlir_sys::mlirOperationGetNumResults(op) {
            return MlirValue {
                ptr: std::ptr::null(),
            };
        }
        mlir_sys::mlirOperationGetResult(op, index as isize)
    }
}

/// The type of `value`.
fn value_type(value: MlirValue) -> MlirType {
    // SAFETY: `value` is a live value (an argument or result read above).
    unsafe { mlir_sys::mlirValueGetType(value) }
}

/// The bytes a memref of static shape `ty` holds.
fn type_bytes(ty: MlirType) -> Option<u64> {
    let view = memref_view(ty, 0)?;
    let elements: i64 = view.sizes.iter().product();
    Some(u64::try_from(elements).ok()? * element_bytes(ty)?)
}

/// The view of buffer `buffer` that a memref of type `ty` is: its static offset, sizes and
/// strides (`None` for dynamic ones, or a type that is no memref).
fn memref_view(ty: MlirType, buffer: usize) -> Option<View> {
    // SAFETY: `ty` is a live type; it is only read, into arrays of its rank.
    unsafe {
        if !mlir_sys::mlirTypeIsAMemRef(ty) || !mlir_sys::mlirShapedTypeHasStaticShape(ty) {
            return None;
        }
        let rank = mlir_sys::mlirShapedTypeGetRank(ty) as usize;
        let sizes: Vec<i64> = (0..rank)
            .map(|d| mlir_sys::mlirShapedTypeGetDimSize(ty, d as isize))
            .collect();
        let mut strides = vec![0i64; rank];
        let mut offset = 0i64;
        let ok = mlir_sys::mlirMemRefTypeGetStridesAndOffset(ty, strides.as_mut_ptr(), &mut offset);
        let dynamic = mlir_sys::mlirShapedTypeGetDynamicStrideOrOffset();
        if ok.value == 0 || offset == dynamic || strides.contains(&dynamic) {
            return None;
        }
        Some(View {
            buffer,
            offset,
            sizes,
            strides,
        })
    }
}

/// The bytes of `global` (a `memref.global` with a dense initial value) as a buffer of type
/// `ty`: its elements in row-major order, a splat repeated, `i1` a byte each.
fn global_bytes(global: &WalkedOp<'_>, ty: MlirType) -> Option<Vec<u8>> {
    let value = global.attribute("initial_value")?;
    let raw: MlirAttribute = value.to_raw();
    let width = element_bytes(ty)? as usize;
    let count = usize::try_from(type_bytes(ty)?).ok()? / width.max(1);
    // SAFETY: the attribute is live; it is checked to be dense elements before its raw data
    // (count elements of `width` bytes, one for a splat; bits for i1, read one by one) is read.
    unsafe {
        if !mlir_sys::mlirAttributeIsADenseElements(raw) {
            return None;
        }
        let splat = mlir_sys::mlirDenseElementsAttrIsSplat(raw);
        let element = mlir_sys::mlirShapedTypeGetElementType(ty);
        let is_bool = mlir_sys::mlirTypeIsAInteger(element)
            && mlir_sys::mlirIntegerTypeGetWidth(element) == 1;
        if is_bool {
            return Some(
                (0..count)
                    .map(|i| {
                        u8::from(mlir_sys::mlirDenseElementsAttrGetBoolValue(
                            raw,
                            if splat { 0 } else { i as isize },
                        ))
                    })
                    .collect(),
            );
        }
        let data = mlir_sys::mlirDenseElementsAttrGetRawData(raw) as *const u8;
        let stored = if splat { width } else { count * width };
        let bytes = std::slice::from_raw_parts(data, stored);
        Some(if splat {
            bytes.repeat(count)
        } else {
            bytes.to_vec()
        })
    }
}
