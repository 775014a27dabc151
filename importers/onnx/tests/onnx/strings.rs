//! Tensors of strings: interned ids through the ops that move or compare them, the model's
//! string constants in the import's table, and every other op refusing them.

use crate::import::{int64s, model, node, options, registry, typed_value};
use tessera::exec::interpret::interpret;
use tessera_onnx::proto::*;
use tessera_onnx::{import, ImportError};

fn strings(name: &str, dims: &[i64], values: &[&str]) -> TensorProto {
    TensorProto {
        dims: dims.to_vec(),
        data_type: DataType::String as i32,
        string_data: values.iter().map(|s| s.as_bytes().to_vec()).collect(),
        name: name.into(),
        ..Default::default()
    }
}

/// `Equal(words, "dog")` and `Gather(vocab, [1, 0])` of a string input and string constants.
fn words_model() -> ModelProto {
    let key = NodeProto {
        attribute: vec![AttributeProto {
            name: "value_string".into(),
            r#type: AttributeType::String as i32,
            s: b"dog".to_vec(),
            ..Default::default()
        }],
        ..node("Constant", &[], &["key"], vec![])
    };
    model(
        vec![
            key,
            node("Equal", &["words", "key"], &["is_dog"], vec![]),
            node("Gather", &["vocab", "order"], &["picked"], vec![]),
        ],
        vec![typed_value("words", &[3], DataType::String)],
        vec![
            typed_value("is_dog", &[3], DataType::Bool),
            typed_value("picked", &[2], DataType::String),
        ],
        vec![
            strings("vocab", &[2], &["cat", "dog"]),
            int64s("order", &[1, 0]),
        ],
    )
}

#[test]
fn string_tensors_move_and_compare_as_interned_ids() {
    let result = import(&words_model(), &options(), &registry()).unwrap_or_else(|e| panic!("{e}"));
    assert!(result.inputs[0].strings);
    let kinds: Vec<bool> = result.outputs.iter().map(|o| o.strings).collect();
    assert_eq!(kinds, [false, true]);
    let mut table = result.strings.clone();
    let words = table.ids(vec![3], &["dog".into(), "emu".into(), "dog".into()]);
    let out = interpret(&result.module, 0, &[words]).expect("runs");
    let is_dog: Vec<f64> = (0..3).map(|i| out[0].get_f64(i)).collect();
    assert_eq!(is_dog, [1.0, 0.0, 1.0]);
    assert_eq!(
        table.strings(&out[1]).expect("ids of strings"),
        ["dog", "cat"]
    );
}

/// Why the one-node graph `op(inputs)` of the string input `words` (and an int64
/// initializer `n`) does not import.
fn refusal(op: &str, inputs: &[&str], output: DataType) -> ImportError {
    let m = model(
        vec![node(op, inputs, &["y"], vec![])],
        vec![typed_value("words", &[2], DataType::String)],
        vec![typed_value("y", &[2], output)],
        vec![int64s("n", &[1, 2])],
    );
    import(&m, &options(), &registry()).err().expect("refused")
}

/// Whether `error` lists one unsupported node for `reason`.
fn unsupported_for(error: &ImportError, reason: &str) -> bool {
    matches!(error, ImportError::Unsupported(nodes) if nodes[0].reason.contains(reason))
}

#[test]
fn ops_that_compute_on_characters_refuse_strings() {
    let error = refusal("Add", &["words", "words"], DataType::String);
    assert!(
        unsupported_for(
            &error,
            "tessera computes on strings only in the ops that move them"
        ),
        "{error}"
    );
    let error = refusal("Equal", &["words", "n"], DataType::Bool);
    assert!(
        matches!(&error, ImportError::Node { message, .. }
            if message.contains("compares strings with numbers")),
        "{error}"
    );
    // A sequence of strings is valid ONNX that tessera does not take: listed, not invalid.
    let error = refusal("SequenceConstruct", &["words"], DataType::String);
    assert!(
        unsupported_for(&error, "input #0 is a tensor of strings"),
        "{error}"
    );
}
