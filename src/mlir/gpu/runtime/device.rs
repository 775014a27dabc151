//! The CUDA driver, as the GPU runtime uses it: one context and stream on device 0, a module
//! of PTX loaded once, device memory, page-locked host memory, copies, launches, and graphs
//! of them captured once and replayed. The driver library
//! (`libcuda.so.1`) is loaded when the first device opens (cudarc's dynamic loading), so
//! tessera builds and runs where there is none; [`driver_present`] says whether there is one
//! before anything calls it (cudarc panics otherwise).

use cudarc::driver::{result, sys, CudaContext, CudaFunction, CudaGraph, CudaStream};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Arc;

/// What a machine without the driver is told.
pub const NO_DRIVER: &str = "no CUDA driver (libcuda.so.1) on this machine";

/// Whether the CUDA driver library can be loaded here.
pub fn driver_present() -> bool {
    // SAFETY: only tries to open the library by its names; calls nothing in it.
    unsafe { sys::is_culib_present() }
}

/// A GPU: device 0's primary context and one stream of its own (not the legacy default
/// stream, which cannot be captured into a graph), on which everything runs in order.
pub struct Device {
    context: Arc<CudaContext>,
    stream: Arc<CudaStream>,
}

/// Device memory of a given size, freed when dropped.
pub struct DeviceBuffer {
    address: sys::CUdeviceptr,
    bytes: usize,
    context: Arc<CudaContext>,
}

/// Page-locked host memory of a given size, zeroed, freed when dropped: the device copies
/// from and to it directly (pageable memory goes through the driver's own staging copy).
pub struct PinnedBuffer {
    pointer: *mut u8,
    bytes: usize,
    context: Arc<CudaContext>,
}

/// Work on the stream captured once (copies and launches on buffers that stay where they
/// are) and replayed by one call of the driver.
pub struct Graph {
    graph: CudaGraph,
}

/// A point in the stream's order, recorded to time what runs between two of them on the
/// device (CUDA events); destroyed when dropped.
pub struct Event {
    event: sys::CUevent,
    context: Arc<CudaContext>,
}

/// A loaded module of kernels, each looked up once.
pub struct Kernels {
    functions: HashMap<String, CudaFunction>,
}

impl Device {
    /// Opens device 0; `Err` says why there is none (no driver, no device, a driver error).
    pub fn open() -> Result<Device, String> {
        if !driver_present() {
            return Err(NO_DRIVER.to_string());
        }
        let context = CudaContext::new(0).map_err(|e| format!("cannot open CUDA device 0: {e}"))?;
        let stream = context
            .new_stream()
            .map_err(|e| format!("cannot create a CUDA stream: {e}"))?;
        Ok(Device { context, stream })
    }

    /// The device's name, its compute capability (`sm_90` for 9.0) and the driver's version.
    pub fn describe(&self) -> Result<(String, String, String), String> {
        let name = self.context.name().map_err(|e| e.to_string())?;
        let (major, minor) = self
            .context
            .compute_capability()
            .map_err(|e| e.to_string())?;
        let mut version = 0;
        // SAFETY: the driver is loaded (a context exists); it writes one integer.
        let status = unsafe { sys::cuDriverGetVersion(&mut version) };
        let driver = match status {
            sys::CUresult::CUDA_SUCCESS => format!("{}.{}", version / 1000, version % 1000 / 10),
            other => format!("unknown ({other:?})"),
        };
        Ok((name, format!("sm_{major}{minor}"), driver))
    }

    /// Loads `ptx` and looks up its kernels `names`, once for every later launch.
    pub fn load<'n>(
        &self,
        ptx: &str,
        names: impl IntoIterator<Item = &'n str>,
    ) -> Result<Kernels, String> {
        let module = self
            .context
            .load_module(cudarc::nvrtc::Ptx::from_src(ptx))
            .map_err(|e| format!("the driver does not load the kernels' PTX: {e}"))?;
        let mut functions = HashMap::new();
        for name in names {
            let function = module
                .load_function(name)
                .map_err(|e| format!("the PTX has no kernel '{name}': {e}"))?;
            functions.insert(name.to_string(), function);
        }
        Ok(Kernels { functions })
    }

    /// `bytes` of device memory (at least one, so that every buffer has an address).
    pub fn allocate(&self, bytes: usize) -> Result<DeviceBuffer, String> {
        self.context.bind_to_thread().map_err(|e| e.to_string())?;
        // SAFETY: the context is current on this thread; the memory is freed on drop.
        let address = unsafe { result::malloc_sync(bytes.max(1)) }
            .map_err(|e| format!("cannot allocate {bytes} bytes on the GPU: {e}"))?;
        Ok(DeviceBuffer {
            address,
            bytes,
            context: Arc::clone(&self.context),
        })
    }

    /// `bytes` of zeroed page-locked host memory (at least one byte).
    pub fn pin(&self, bytes: usize) -> Result<PinnedBuffer, String> {
        self.context.bind_to_thread().map_err(|e| e.to_string())?;
        // SAFETY: the context is current on this thread; the memory is freed on drop.
        let pointer = unsafe { result::malloc_host(bytes.max(1), 0) }
            .map_err(|e| format!("cannot allocate {bytes} bytes of page-locked host memory: {e}"))?
            .cast::<u8>();
        // SAFETY: `pointer` holds `bytes.max(1)` writable bytes, just allocated.
        unsafe { std::ptr::write_bytes(pointer, 0, bytes.max(1)) };
        Ok(PinnedBuffer {
            pointer,
            bytes,
            context: Arc::clone(&self.context),
        })
    }

    /// What `work` queues on the stream, captured as a graph instead of run; `None` when it
    /// queued nothing, failed, or the driver could not capture it (the caller then queues
    /// the work itself, which says what fails). The stream leaves capture mode either way.
    pub fn capture<E>(&self, work: impl FnOnce() -> Result<(), E>) -> Option<Graph> {
        self.stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .ok()?;
        let queued = work();
        let captured = self.stream.end_capture(sys::CUgraphInstantiate_flags(0));
        queued.ok()?;
        captured.ok().flatten().map(|graph| Graph { graph })
    }

    /// Copies `data` to the start of `buffer` (at most its size), in stream order.
    pub fn upload(&self, buffer: &DeviceBuffer, data: &[u8]) -> Result<(), String> {
        let data = &data[..data.len().min(buffer.bytes)];
        // SAFETY: `buffer` holds at least `data.len()` bytes; the host memory outlives the
        // copy: callers synchronize the stream before they drop it, and a captured graph's
        // copies read page-locked memory kept as long as the graph.
        unsafe { result::memcpy_htod_async(buffer.address, data, self.stream.cu_stream()) }
            .map_err(|e| format!("cannot copy {} bytes to the GPU: {e}", data.len()))
    }

    /// Copies the start of `buffer` into `data` (at most its size), in stream order; the data
    /// is there once the stream is synchronized.
    pub fn download(&self, buffer: &DeviceBuffer, data: &mut [u8]) -> Result<(), String> {
        let length = data.len().min(buffer.bytes);
        // SAFETY: `buffer` holds at least `length` bytes; `data` stays alive until the caller
        // synchronizes (a captured graph's copies write page-locked memory kept as long as
        // the graph).
        unsafe {
            result::memcpy_dtoh_async(&mut data[..length], buffer.address, self.stream.cu_stream())
        }
        .map_err(|e| format!("cannot copy {length} bytes from the GPU: {e}"))
    }

    /// Launches `kernel` of `kernels` on `grid` blocks of `block` threads with `parameters`
    /// (each its bytes, in the kernel's parameter order).
    pub fn launch(
        &self,
        kernels: &Kernels,
        kernel: &str,
        grid: [u32; 3],
        block: [u32; 3],
        parameters: &mut [Vec<u8>],
    ) -> Result<(), String> {
        let function = kernels
            .functions
            .get(kernel)
            .ok_or_else(|| format!("the PTX has no kernel '{kernel}'"))?;
        let mut pointers: Vec<*mut c_void> = parameters
            .iter_mut()
            .map(|p| p.as_mut_ptr().cast::<c_void>())
            .collect();
        // SAFETY: the function belongs to the loaded module; each pointer points to a
        // parameter's bytes, laid out as the kernel declares them (the launch plan's memref
        // descriptors and scalars), alive until the launch returns (the driver copies them).
        unsafe {
            result::launch_kernel(
                function.cu_function(),
                (grid[0], grid[1], grid[2]),
                (block[0], block[1], block[2]),
                0,
                self.stream.cu_stream(),
                &mut pointers,
            )
        }
        .map_err(|e| e.to_string())
    }

    /// A new event, recorded now in stream order.
    pub fn record(&self) -> Result<Event, String> {
        self.context.bind_to_thread().map_err(|e| e.to_string())?;
        let event = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)
            .map_err(|e| format!("cannot create a CUDA event: {e}"))?;
        let event = Event {
            event,
            context: Arc::clone(&self.context),
        };
        // SAFETY: the event and the stream belong to this context, current on this thread.
        unsafe { result::event::record(event.event, self.stream.cu_stream()) }
            .map_err(|e| format!("cannot record a CUDA event: {e}"))?;
        Ok(event)
    }

    /// Seconds on the device between `start` and `end`, both recorded and the stream
    /// synchronized since.
    pub fn elapsed(&self, start: &Event, end: &Event) -> Result<f64, String> {
        // SAFETY: both events were created and recorded in this context and have completed.
        unsafe { result::event::elapsed(start.event, end.event) }
            .map(|ms| f64::from(ms) / 1e3)
            .map_err(|e| format!("cannot read a CUDA event's time: {e}"))
    }

    /// Copies `bytes` from `source` to `target` on the device, in stream order.
    pub fn copy(
        &self,
        target: &DeviceBuffer,
        source: &DeviceBuffer,
        bytes: usize,
    ) -> Result<(), String> {
        let bytes = bytes.min(target.bytes).min(source.bytes);
        // SAFETY: both buffers hold at least `bytes` bytes and live past the synchronization
        // that follows every use of this copy.
        unsafe {
            result::memcpy_dtod_async(
                target.address,
                source.address,
                bytes,
                self.stream.cu_stream(),
            )
        }
        .map_err(|e| format!("cannot copy {bytes} bytes on the GPU: {e}"))
    }

    /// The device's multiprocessors.
    pub fn multiprocessors(&self) -> Result<u32, String> {
        self.context
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map(|n| n.max(1) as u32)
            .map_err(|e| e.to_string())
    }

    /// Waits for everything queued on the stream; a kernel's fault surfaces here.
    pub fn synchronize(&self) -> Result<(), String> {
        self.stream.synchronize().map_err(|e| e.to_string())
    }
}

impl Graph {
    /// Queues the captured work on the stream it was captured from.
    pub fn launch(&self) -> Result<(), String> {
        self.graph
            .launch()
            .map_err(|e| format!("cannot launch a CUDA graph: {e}"))
    }
}

impl PinnedBuffer {
    /// Its bytes. Only read them when no copy into them is in flight (after a synchronize).
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `pointer` holds `bytes` initialized bytes (zeroed at allocation) for the
        // life of `self`; the borrow of `self` keeps them alive.
        unsafe { std::slice::from_raw_parts(self.pointer, self.bytes) }
    }

    /// Its bytes, to write. Only when no copy from them is in flight (after a synchronize).
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and the mutable borrow of `self` makes this the only
        // reference.
        unsafe { std::slice::from_raw_parts_mut(self.pointer, self.bytes) }
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        if self.context.bind_to_thread().is_ok() {
            // SAFETY: the pointer came from `malloc_host` in this context and is freed once.
            let _ = unsafe { result::free_host(self.pointer.cast()) };
        }
    }
}

impl DeviceBuffer {
    /// Its device address.
    pub fn address(&self) -> u64 {
        self.address
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if self.context.bind_to_thread().is_ok() {
            // SAFETY: the event was created in this context and is destroyed once.
            let _ = unsafe { result::event::destroy(self.event) };
        }
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if self.context.bind_to_thread().is_ok() {
            // SAFETY: the address came from `malloc_sync` in this context and is freed once.
            let _ = unsafe { result::free_sync(self.address) };
        }
    }
}
