//! ONNX models into tessera: the protobuf format as `prost` messages ([`proto`]), a model
//! file with its external data ([`read`]), its tensors as tessera tensors ([`tensor`]), and
//! the graph as a verified tessera module ([`import`]: each node through its converter in
//! [`ops`], built by [`graph`] with the ops' own shape rules and constant folding; sequences
//! and optionals resolved at import time as [`item`]s).

pub mod graph;
pub mod import;
pub mod item;
pub mod node;
pub mod nodes;
pub mod ops;
pub mod proto;
pub mod read;
pub mod strings;
pub mod tensor;

pub use import::{
    import, import_file, GraphInput, GraphOutput, ImportError, ImportOptions, Imported, InputShape,
    UnsupportedNode,
};
pub use read::{read_model, read_tensor, read_value, ReadError, StoredTensor, StoredValue};
pub use strings::StringTable;
