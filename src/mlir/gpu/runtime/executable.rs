//! A compiled module on the GPU: its kernels loaded once, and for each function, at its first
//! call, the device buffers of its launch plan (parameters, temporaries, constants uploaded
//! once), page-locked host memory for its inputs and results, and a CUDA graph of one whole
//! call (copies in, the kernels in order, copies out) that every later call replays with one
//! driver call. A call checks its inputs against the function's signature before anything
//! reaches the device.

use crate::exec::bytes::{decode, element_bytes, encode_into};
use crate::exec::signature::{RunError, Signature};
use crate::exec::tensor::Tensor;
use crate::mlir::gpu::launch_plan::{Buffer, FunctionPlan, LaunchPlan};
use crate::mlir::gpu::runtime::device::{Device, DeviceBuffer, Graph, Kernels, PinnedBuffer};
use crate::types::TensorType;
use std::collections::HashMap;
use std::ops::Range;

/// Why a call on the GPU could not run.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// The call itself is wrong (an unknown function, inputs of the wrong count or type).
    #[error(transparent)]
    Call(#[from] RunError),
    /// The device could not do what the runtime asked (no driver, no memory, a failed copy).
    #[error("{0}")]
    Device(String),
    /// A kernel could not be launched, or failed.
    #[error("kernel '{kernel}' (from {origin}) failed: {message}")]
    Kernel {
        /// The kernel's name in the PTX.
        kernel: String,
        /// The `.tsr` op it came from.
        origin: String,
        /// What the driver said.
        message: String,
    },
    /// The module's launch plan does not match the function's signature.
    #[error("the launch plan of '@{0}' does not match its signature")]
    Plan(String),
}

/// Device times of a function's kernels over several calls, in seconds.
#[derive(Clone, Debug, Default)]
pub struct KernelTimes {
    /// Each call's kernels together.
    pub calls: Vec<f64>,
    /// For each launch in order, its time in each call.
    pub launches: Vec<Vec<f64>>,
}

/// A module's functions, runnable on the GPU.
pub struct GpuExecutable {
    device: Device,
    kernels: Option<Kernels>,
    plan: LaunchPlan,
    signatures: Vec<Signature>,
    resident: HashMap<String, Resident>,
}

/// What one function keeps from its first call to the executable's end.
struct Resident {
    /// The launch plan's buffers on the device.
    buffers: Vec<DeviceBuffer>,
    /// Host memory of its inputs and results.
    staging: Staging,
    /// One whole call (copies in, kernels, copies out), captured; `None` where the driver
    /// could not capture it (the call then queues the same work itself).
    call: Option<Graph>,
    /// The kernels alone, captured: what the device time of a call measures.
    kernels: Option<Graph>,
}

/// A function's inputs and results in page-locked host memory, each a range of its buffer.
struct Staging {
    inputs: PinnedBuffer,
    input_ranges: Vec<Range<usize>>,
    results: PinnedBuffer,
    result_ranges: Vec<Range<usize>>,
}

/// Consecutive byte ranges of the given sizes, and their total.
fn ranges(sizes: impl Iterator<Item = usize>) -> (Vec<Range<usize>>, usize) {
    let mut end = 0;
    let ranges = sizes
        .map(|size| {
            let range = end..end + size;
            end += size;
            range
        })
        .collect();
    (ranges, end)
}

/// The bytes of a tensor of type `ty` on the device.
fn tensor_bytes(ty: &TensorType) -> usize {
    ty.num_elements().unwrap_or(0) as usize * element_bytes(ty.element)
}

/// The tensor type each parameter of `function` (with `signature`) holds: its inputs, then its
/// results' out-parameters.
fn parameter_types(
    function: &FunctionPlan,
    signature: &Signature,
) -> Result<Vec<TensorType>, GpuError> {
    let types: Vec<TensorType> = signature
        .params
        .iter()
        .map(|(_, t)| t.clone())
        .chain(signature.results.iter().cloned())
        .collect();
    if types.len() != function.parameters.len() {
        return Err(GpuError::Plan(function.name.clone()));
    }
    Ok(types)
}

/// The plan of function `name` in `plan`.
fn function<'p>(plan: &'p LaunchPlan, name: &str) -> Result<&'p FunctionPlan, GpuError> {
    plan.functions
        .iter()
        .find(|f| f.name == name)
        .ok_or_else(|| GpuError::Plan(name.to_string()))
}

impl GpuExecutable {
    /// Opens the GPU and loads `plan`'s kernels, for functions with `signatures`.
    pub fn load(plan: LaunchPlan, signatures: Vec<Signature>) -> Result<GpuExecutable, GpuError> {
        let device = Device::open().map_err(GpuError::Device)?;
        let names = plan
            .functions
            .iter()
            .flat_map(|f| f.launches.iter().map(|l| l.kernel.as_str()));
        let kernels = match plan.ptx.is_empty() {
            true => None,
            false => Some(device.load(&plan.ptx, names).map_err(GpuError::Device)?),
        };
        Ok(GpuExecutable {
            device,
            kernels,
            plan,
            signatures,
            resident: HashMap::new(),
        })
    }

    /// The device's name, its chip and the driver's version.
    pub fn describe(&self) -> Result<(String, String, String), GpuError> {
        self.device.describe().map_err(GpuError::Device)
    }

    /// What `function` (its parameters of `types`, the first `inputs` of them its inputs)
    /// keeps for every call, made at its first: the device buffers (constants uploaded), the
    /// page-locked staging memory and the graphs of a call and of its kernels.
    fn resident<'r>(
        device: &Device,
        kernels: Option<&Kernels>,
        resident: &'r mut HashMap<String, Resident>,
        function: &FunctionPlan,
        types: &[TensorType],
        inputs: usize,
    ) -> Result<&'r mut Resident, GpuError> {
        if !resident.contains_key(&function.name) {
            let mut buffers = Vec::with_capacity(function.buffers.len());
            for buffer in &function.buffers {
                let bytes = match buffer {
                    Buffer::Parameter(p) => tensor_bytes(&types[*p]),
                    Buffer::Temporary(bytes) => *bytes as usize,
                    Buffer::Constant(data) => data.len(),
                };
                let allocated = device.allocate(bytes).map_err(GpuError::Device)?;
                if let Buffer::Constant(data) = buffer {
                    device.upload(&allocated, data).map_err(GpuError::Device)?;
                }
                buffers.push(allocated);
            }
            let (input_ranges, input_bytes) = ranges(types[..inputs].iter().map(tensor_bytes));
            let (result_ranges, result_bytes) = ranges(types[inputs..].iter().map(tensor_bytes));
            let mut staging = Staging {
                inputs: device.pin(input_bytes).map_err(GpuError::Device)?,
                input_ranges,
                results: device.pin(result_bytes).map_err(GpuError::Device)?,
                result_ranges,
            };
            device.synchronize().map_err(GpuError::Device)?;
            let call = device
                .capture(|| Self::queue_call(device, kernels, function, &buffers, &mut staging));
            let addresses = addresses(&buffers);
            let kernel_graph = device
                .capture(|| Self::launch_all(device, kernels, function, &addresses, || Ok(())));
            let kept = Resident {
                buffers,
                staging,
                call,
                kernels: kernel_graph,
            };
            resident.insert(function.name.clone(), kept);
        }
        resident
            .get_mut(&function.name)
            .ok_or_else(|| GpuError::Plan(function.name.clone()))
    }

    /// Queues one whole call of `function` on the stream: its staged inputs copied in, its
    /// kernels, its results copied out to the staging memory.
    fn queue_call(
        device: &Device,
        kernels: Option<&Kernels>,
        function: &FunctionPlan,
        buffers: &[DeviceBuffer],
        staging: &mut Staging,
    ) -> Result<(), GpuError> {
        let buffer = |p: usize| {
            function
                .views
                .get(function.parameters[p])
                .map(|view| &buffers[view.buffer])
                .ok_or_else(|| GpuError::Plan(function.name.clone()))
        };
        let staged = staging.inputs.as_slice();
        for (p, range) in staging.input_ranges.iter().enumerate() {
            device
                .upload(buffer(p)?, &staged[range.clone()])
                .map_err(GpuError::Device)?;
        }
        Self::launch_all(device, kernels, function, &addresses(buffers), || Ok(()))?;
        let inputs = staging.input_ranges.len();
        let results = staging.results.as_mut_slice();
        for (r, range) in staging.result_ranges.iter().enumerate() {
            device
                .download(buffer(inputs + r)?, &mut results[range.clone()])
                .map_err(GpuError::Device)?;
        }
        Ok(())
    }

    /// Launches the kernels of `function` in order on buffers at `addresses`, calling
    /// `after_each` after each launch is queued.
    fn launch_all(
        device: &Device,
        kernels: Option<&Kernels>,
        function: &FunctionPlan,
        addresses: &[u64],
        mut after_each: impl FnMut() -> Result<(), GpuError>,
    ) -> Result<(), GpuError> {
        for launch in &function.launches {
            let kernels = kernels.ok_or_else(|| GpuError::Plan(function.name.clone()))?;
            let mut parameters = launch.parameters(function, addresses);
            device
                .launch(
                    kernels,
                    &launch.kernel,
                    launch.grid,
                    launch.block,
                    &mut parameters,
                )
                .map_err(|message| GpuError::Kernel {
                    kernel: launch.kernel.clone(),
                    origin: launch.origin.clone(),
                    message,
                })?;
            after_each()?;
        }
        Ok(())
    }

    /// The device time of function `name` on `inputs` over `runs` calls of its kernels alone
    /// (the inputs copied in once, before): each call's seconds (CUDA events around the
    /// kernels' graph, or around their launches where there is none), and each launch's
    /// seconds per call (events around each launch, in a separate pass).
    pub fn time_kernels(
        &mut self,
        name: &str,
        inputs: &[Tensor],
        runs: usize,
    ) -> Result<KernelTimes, GpuError> {
        self.call(name, inputs)?;
        let function = function(&self.plan, name)?;
        let resident = &self.resident[name];
        let addresses = addresses(&resident.buffers);
        let device = &self.device;
        let kernels = self.kernels.as_ref();
        let mut times = KernelTimes {
            calls: Vec::with_capacity(runs),
            launches: vec![Vec::with_capacity(runs); function.launches.len()],
        };
        let elapsed = |start: &_, end: &_| device.elapsed(start, end).map_err(GpuError::Device);
        for _ in 0..runs.max(1) {
            let start = device.record().map_err(GpuError::Device)?;
            match &resident.kernels {
                Some(graph) => graph.launch().map_err(GpuError::Device)?,
                None => Self::launch_all(device, kernels, function, &addresses, || Ok(()))?,
            }
            let end = device.record().map_err(GpuError::Device)?;
            let mut events = vec![device.record().map_err(GpuError::Device)?];
            Self::launch_all(device, kernels, function, &addresses, || {
                events.push(device.record().map_err(GpuError::Device)?);
                Ok(())
            })?;
            device.synchronize().map_err(GpuError::Device)?;
            times.calls.push(elapsed(&start, &end)?);
            for (l, pair) in events.windows(2).enumerate() {
                times.launches[l].push(elapsed(&pair[0], &pair[1])?);
            }
        }
        Ok(times)
    }

    /// The launches of function `name`: each kernel's name and the `.tsr` op it came from.
    pub fn launches(&self, name: &str) -> Vec<(String, String)> {
        self.plan
            .functions
            .iter()
            .filter(|f| f.name == name)
            .flat_map(|f| {
                f.launches
                    .iter()
                    .map(|l| (l.kernel.clone(), l.origin.clone()))
            })
            .collect()
    }

    /// Calls function `name` on `inputs` and returns its results.
    pub fn call(&mut self, name: &str, inputs: &[Tensor]) -> Result<Vec<Tensor>, GpuError> {
        self.stage(name, inputs)?;
        self.run_staged(name)?;
        let signature = Signature::find(&self.signatures, name)?;
        let staging = &self.resident[name].staging;
        let results = staging.results.as_slice();
        Ok(signature
            .results
            .iter()
            .zip(&staging.result_ranges)
            .map(|(ty, range)| decode(ty, &results[range.clone()]))
            .collect())
    }

    /// Checks `inputs` against function `name`'s signature and writes them into its
    /// page-locked input memory, for [`run_staged`](Self::run_staged) to copy in.
    pub fn stage(&mut self, name: &str, inputs: &[Tensor]) -> Result<(), GpuError> {
        let signature = Signature::find(&self.signatures, name)?;
        let types: Vec<&TensorType> = inputs.iter().map(|t| &t.ty).collect();
        signature.check_inputs(&types)?;
        let function = function(&self.plan, name)?;
        let parameter_types = parameter_types(function, signature)?;
        let staging = &mut Self::resident(
            &self.device,
            self.kernels.as_ref(),
            &mut self.resident,
            function,
            &parameter_types,
            inputs.len(),
        )?
        .staging;
        let memory = staging.inputs.as_mut_slice();
        for (input, range) in inputs.iter().zip(&staging.input_ranges) {
            encode_into(input, &mut memory[range.clone()]);
        }
        Ok(())
    }

    /// One call of function `name` on the inputs [`stage`](Self::stage) wrote last: copies
    /// them in, runs the kernels, copies the results out to page-locked memory, and waits
    /// for all of it; what a caller that keeps its data in the device's byte layout pays.
    pub fn run_staged(&mut self, name: &str) -> Result<(), GpuError> {
        let function = function(&self.plan, name)?;
        let resident = self
            .resident
            .get_mut(name)
            .ok_or_else(|| GpuError::Plan(format!("{name} (no inputs staged)")))?;
        match &resident.call {
            Some(graph) => graph.launch().map_err(GpuError::Device)?,
            None => Self::queue_call(
                &self.device,
                self.kernels.as_ref(),
                function,
                &resident.buffers,
                &mut resident.staging,
            )?,
        }
        self.device
            .synchronize()
            .map_err(|message| Self::launch_error(function, message))
    }

    /// A failure of `function`'s work on the device, named by its last kernel (the driver
    /// reports a fault at the next synchronize, not at the launch that caused it).
    fn launch_error(function: &FunctionPlan, message: String) -> GpuError {
        match function.launches.last() {
            Some(last) => GpuError::Kernel {
                kernel: format!("{} (or an earlier one of @{})", last.kernel, function.name),
                origin: last.origin.clone(),
                message,
            },
            None => GpuError::Device(message),
        }
    }
}

/// The device addresses of `buffers`, in order.
fn addresses(buffers: &[DeviceBuffer]) -> Vec<u64> {
    buffers.iter().map(DeviceBuffer::address).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staging_ranges_follow_each_other() {
        let (found, total) = ranges([12, 0, 4].into_iter());
        assert_eq!(found, vec![0..12, 12..12, 12..16]);
        assert_eq!(total, 16);
    }
}
