//! A compiled module on the GPU: its kernels loaded once, and for each function the device
//! buffers of its launch plan, allocated at its first call and kept for every later one
//! (parameters, temporaries, constants uploaded once); a call checks its inputs against the
//! function's signature before anything reaches the device, copies them in, launches the
//! kernels in order on one stream, and copies the results out.

use crate::exec::bytes::{decode, element_bytes, encode};
use crate::exec::signature::{RunError, Signature};
use crate::exec::tensor::Tensor;
use crate::mlir::gpu::launch_plan::{Buffer, FunctionPlan, LaunchPlan};
use crate::mlir::gpu::runtime::device::{Device, DeviceBuffer, Kernels};
use crate::types::TensorType;
use std::collections::HashMap;

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
    resident: HashMap<String, Vec<DeviceBuffer>>,
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

    /// The buffers of `function` (its parameters of `types`) on `device`, allocated and its
    /// constants uploaded at its first call, kept in `resident` for every later one.
    fn buffers<'r>(
        device: &Device,
        resident: &'r mut HashMap<String, Vec<DeviceBuffer>>,
        function: &FunctionPlan,
        types: &[TensorType],
    ) -> Result<&'r [DeviceBuffer], GpuError> {
        if !resident.contains_key(&function.name) {
            let mut buffers = Vec::with_capacity(function.buffers.len());
            for buffer in &function.buffers {
                let bytes = match buffer {
                    Buffer::Parameter(p) => {
                        let ty = &types[*p];
                        ty.num_elements().unwrap_or(0) as usize * element_bytes(ty.element)
                    }
                    Buffer::Temporary(bytes) => *bytes as usize,
                    Buffer::Constant(data) => data.len(),
                };
                let allocated = device.allocate(bytes).map_err(GpuError::Device)?;
                if let Buffer::Constant(data) = buffer {
                    device.upload(&allocated, data).map_err(GpuError::Device)?;
                }
                buffers.push(allocated);
            }
            resident.insert(function.name.clone(), buffers);
        }
        Ok(&resident[&function.name])
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
    /// (the inputs copied in once, before; CUDA events around each launch): each call's
    /// seconds, and each launch's seconds per call.
    pub fn time_kernels(
        &mut self,
        name: &str,
        inputs: &[Tensor],
        runs: usize,
    ) -> Result<KernelTimes, GpuError> {
        self.call(name, inputs)?;
        let function = function(&self.plan, name)?;
        let addresses: Vec<u64> = self.resident[name]
            .iter()
            .map(DeviceBuffer::address)
            .collect();
        let mut times = KernelTimes {
            calls: Vec::with_capacity(runs),
            launches: vec![Vec::with_capacity(runs); function.launches.len()],
        };
        for _ in 0..runs.max(1) {
            let mut events = vec![self.device.record().map_err(GpuError::Device)?];
            Self::launch_all(
                &self.device,
                self.kernels.as_ref(),
                function,
                &addresses,
                || {
                    events.push(self.device.record().map_err(GpuError::Device)?);
                    Ok(())
                },
            )?;
            self.device.synchronize().map_err(GpuError::Device)?;
            let mut total = 0.0;
            for (l, pair) in events.windows(2).enumerate() {
                let seconds = self
                    .device
                    .elapsed(&pair[0], &pair[1])
                    .map_err(GpuError::Device)?;
                times.launches[l].push(seconds);
                total += seconds;
            }
            times.calls.push(total);
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
        let signature = Signature::find(&self.signatures, name)?;
        let types: Vec<&TensorType> = inputs.iter().map(|t| &t.ty).collect();
        signature.check_inputs(&types)?;
        let function = function(&self.plan, name)?;
        let parameter_types = parameter_types(function, signature)?;
        let buffers = Self::buffers(&self.device, &mut self.resident, function, &parameter_types)?;
        let parameter_buffer = |p: usize| {
            function
                .views
                .get(function.parameters[p])
                .map(|view| &buffers[view.buffer])
        };
        let mut staged = Vec::new();
        for (p, input) in inputs.iter().enumerate() {
            let buffer = parameter_buffer(p).ok_or_else(|| GpuError::Plan(name.to_string()))?;
            staged.push(encode(input));
            let data = staged.last().map_or(&[][..], Vec::as_slice);
            self.device.upload(buffer, data).map_err(GpuError::Device)?;
        }
        let addresses: Vec<u64> = buffers.iter().map(DeviceBuffer::address).collect();
        Self::launch_all(
            &self.device,
            self.kernels.as_ref(),
            function,
            &addresses,
            || Ok(()),
        )?;
        let mut outputs: Vec<Vec<u8>> = Vec::new();
        for (r, ty) in signature.results.iter().enumerate() {
            let bytes = ty.num_elements().unwrap_or(0) as usize * element_bytes(ty.element);
            outputs.push(vec![0; bytes]);
            let buffer = parameter_buffer(signature.params.len() + r)
                .ok_or_else(|| GpuError::Plan(name.to_string()))?;
            let data = outputs.last_mut().map_or(&mut [][..], Vec::as_mut_slice);
            self.device
                .download(buffer, data)
                .map_err(GpuError::Device)?;
        }
        self.device
            .synchronize()
            .map_err(|message| match function.launches.last() {
                Some(last) => GpuError::Kernel {
                    kernel: format!("{} (or an earlier one of @{name})", last.kernel),
                    origin: last.origin.clone(),
                    message,
                },
                None => GpuError::Device(message),
            })?;
        drop(staged);
        Ok(signature
            .results
            .iter()
            .zip(&outputs)
            .map(|(ty, bytes)| decode(ty, bytes))
            .collect())
    }
}
