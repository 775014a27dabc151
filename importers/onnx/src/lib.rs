//! ONNX models into tessera. This first part reads them: the protobuf format as `prost`
//! messages ([`proto`]), a model file with its external data ([`read`]), its tensors as
//! tessera tensors ([`tensor`]); turning a graph into a tessera module comes next (issue 12).

pub mod proto;
pub mod read;
pub mod tensor;

pub use read::{read_model, ReadError};
