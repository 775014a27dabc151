//! Sequences and optionals, resolved at import time: a sequence input is one parameter per
//! element and a sequence output one result per element; sequence ops move values, and
//! optionals become constants of whether they hold a value.

use crate::import::{
    body_attr, floats, imported, int64_scalar, int_attr, model, node, options, registry, value,
};
use tessera::exec::interpret::interpret;
use tessera::exec::tensor::Tensor;
use tessera::types::{ElementType, TensorType};
use tessera_onnx::proto::*;
use tessera_onnx::{import, ImportError, InputShape};

/// A value of a sequence of float tensors (of unknown shape).
fn sequence_value(name: &str) -> ValueInfoProto {
    let element = TypeProto {
        value: Some(Value::TensorType(TensorTypeProto {
            elem_type: DataType::Float as i32,
            shape: None,
        })),
        denotation: String::new(),
    };
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            value: Some(Value::SequenceType(ElementTypeProto {
                elem_type: Some(Box::new(element)),
            })),
            denotation: String::new(),
        }),
        doc_string: String::new(),
    }
}

/// A value of an optional float tensor of shape `dims`.
fn optional_value(name: &str, dims: &[i64]) -> ValueInfoProto {
    let tensor = value(name, dims).r#type;
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            value: Some(Value::OptionalType(ElementTypeProto {
                elem_type: tensor.map(Box::new),
            })),
            denotation: String::new(),
        }),
        doc_string: String::new(),
    }
}

/// What each result is, by label.
fn labels(result: &tessera_onnx::Imported) -> Vec<String> {
    result.outputs.iter().map(|o| o.label.clone()).collect()
}

fn vector(values: &[f64]) -> Tensor {
    Tensor::from_f64(
        &TensorType::new(vec![values.len() as u64], ElementType::F32),
        values.iter().copied(),
    )
}

fn numbers(t: &Tensor) -> Vec<f64> {
    (0..t.len()).map(|i| t.get_f64(i)).collect()
}

/// `s = insert(x, t, 0)`; its last element, its length and its elements concatenated.
fn sequence_model() -> ModelProto {
    model(
        vec![
            node("SequenceInsert", &["x", "t", "zero"], &["s"], vec![]),
            node("SequenceAt", &["s", "minus_one"], &["last"], vec![]),
            node("SequenceLength", &["s"], &["n"], vec![]),
            node(
                "ConcatFromSequence",
                &["s"],
                &["all"],
                vec![int_attr("axis", 0)],
            ),
        ],
        vec![sequence_value("x")],
        vec![
            sequence_value("s"),
            value("last", &[3]),
            value("n", &[]),
            value("all", &[6]),
        ],
        vec![
            floats("t", &[1], vec![7.0]),
            int64_scalar("zero", 0),
            int64_scalar("minus_one", -1),
        ],
    )
}

#[test]
fn a_sequence_input_is_a_parameter_per_element_and_an_output_a_result_per_element() {
    let m = sequence_model();
    let mut shaped = options();
    shaped
        .input_shapes
        .insert("x".into(), InputShape::Sequence(vec![vec![2], vec![3]]));
    let result = import(&m, &shaped, &registry()).unwrap_or_else(|e| panic!("{e}"));
    let input_labels: Vec<String> = result.inputs.iter().map(|i| i.label()).collect();
    assert_eq!(input_labels, ["x[0]", "x[1]"]);
    assert_eq!(
        labels(&result),
        ["s[0]", "s[1]", "s[2]", "last", "n", "all"]
    );
    let out = interpret(
        &result.module,
        0,
        &[vector(&[1.0, 2.0]), vector(&[3.0, 4.0, 5.0])],
    )
    .expect("runs");
    assert_eq!(numbers(&out[0]), [7.0]);
    assert_eq!(numbers(&out[1]), [1.0, 2.0]);
    assert_eq!(numbers(&out[2]), [3.0, 4.0, 5.0]);
    assert_eq!(numbers(&out[3]), [3.0, 4.0, 5.0]);
    assert_eq!(
        (out[4].ty.element, numbers(&out[4])),
        (ElementType::I64, vec![3.0])
    );
    assert_eq!(numbers(&out[5]), [7.0, 1.0, 2.0, 3.0, 4.0, 5.0]);

    // Its length is not in its type: the import asks for it.
    let error = import(&m, &options(), &registry())
        .err()
        .expect("needs the sequence's shapes");
    assert!(
        error.to_string().contains("graph input 'x' is a sequence")
            && error.to_string().contains("--input-shape NAME=[DxD,...]"),
        "{error}"
    );
    // A position past the end is the model's error, named.
    let mut past = sequence_model();
    past.graph.as_mut().unwrap().initializer[2] = int64_scalar("minus_one", 5);
    let error = import(&past, &shaped, &registry())
        .err()
        .expect("out of range");
    assert!(
        matches!(&error, ImportError::Node { node, message }
            if node.contains("SequenceAt") && message.contains("position 5 is out of range")),
        "{error}"
    );
}

#[test]
fn splitting_erasing_and_mapping_sequences() {
    // split(x, 2) = [x[0:2], x[2:4], x[4:5]]; erase the middle; add w to each.
    let add_w = body_attr(
        "body",
        vec![node("Add", &["e", "w_in"], &["e_out"], vec![])],
        &["e", "w_in"],
        &["e_out"],
    );
    let m = model(
        vec![
            node("SplitToSequence", &["x", "two"], &["parts"], vec![]),
            node("SequenceErase", &["parts", "one"], &["kept"], vec![]),
            node("SequenceMap", &["kept", "w"], &["mapped"], vec![add_w]),
            node(
                "SplitToSequence",
                &["x"],
                &["singles"],
                vec![int_attr("keepdims", 0)],
            ),
            node(
                "ConcatFromSequence",
                &["singles"],
                &["stacked"],
                vec![int_attr("axis", 0), int_attr("new_axis", 1)],
            ),
        ],
        vec![value("x", &[5])],
        vec![sequence_value("mapped"), value("stacked", &[5])],
        vec![
            int64_scalar("two", 2),
            int64_scalar("one", 1),
            floats("w", &[], vec![10.0]),
        ],
    );
    let result = imported(&m);
    assert_eq!(labels(&result), ["mapped[0]", "mapped[1]", "stacked"]);
    let out = interpret(&result.module, 0, &[vector(&[1.0, 2.0, 3.0, 4.0, 5.0])]).expect("runs");
    assert_eq!(numbers(&out[0]), [11.0, 12.0]);
    assert_eq!(numbers(&out[1]), [15.0]);
    assert_eq!(out[2].ty.shape, [5]);
    assert_eq!(numbers(&out[2]), [1.0, 2.0, 3.0, 4.0, 5.0]);
}

/// `has = OptionalHasElement(o)`, and `o`'s value where the optional holds one.
fn optional_model(get: bool) -> ModelProto {
    let mut nodes = vec![node("OptionalHasElement", &["o"], &["has"], vec![])];
    let mut outputs = vec![value("has", &[])];
    if get {
        nodes.push(node("OptionalGetElement", &["o"], &["got"], vec![]));
        outputs.push(value("got", &[2]));
    }
    model(nodes, vec![optional_value("o", &[2])], outputs, vec![])
}

#[test]
fn optionals_hold_a_value_or_not_as_imported() {
    let present = imported(&optional_model(true));
    assert!(
        present
            .notes
            .iter()
            .any(|n| n.contains("input 'o': an optional")),
        "{:?}",
        present.notes
    );
    let out = interpret(&present.module, 0, &[vector(&[1.5, 2.5])]).expect("runs");
    assert_eq!(numbers(&out[0]), [1.0]);
    assert_eq!(numbers(&out[1]), [1.5, 2.5]);

    let mut empty = options();
    empty.input_shapes.insert("o".into(), InputShape::Absent);
    let absent =
        import(&optional_model(false), &empty, &registry()).unwrap_or_else(|e| panic!("{e}"));
    assert!(absent.inputs.is_empty());
    let out = interpret(&absent.module, 0, &[]).expect("runs");
    assert_eq!(numbers(&out[0]), [0.0]);

    // Taking the value of an empty optional is the model's error.
    let error = import(&optional_model(true), &empty, &registry())
        .err()
        .expect("empty");
    assert!(error.to_string().contains("an empty optional"), "{error}");
    // A tensor input given as none is refused.
    let mut wrong = options();
    wrong.input_shapes.insert("x".into(), InputShape::Absent);
    let tensor_model = model(
        vec![node("Relu", &["x"], &["y"], vec![])],
        vec![value("x", &[2])],
        vec![value("y", &[2])],
        vec![],
    );
    let error = import(&tensor_model, &wrong, &registry())
        .err()
        .expect("not optional");
    assert!(error.to_string().contains("is not optional"), "{error}");
}

#[test]
fn a_run_time_if_selects_sequences_element_by_element_and_needs_optionals_known() {
    let branch = |name: &str, first: &str| {
        body_attr(
            name,
            vec![node("SequenceConstruct", &[first, "b"], &["out"], vec![])],
            &[],
            &["out"],
        )
    };
    let mut cond = value("cond", &[]);
    if let Some(Value::TensorType(t)) = cond.r#type.as_mut().and_then(|t| t.value.as_mut()) {
        t.elem_type = DataType::Bool as i32;
    }
    let m = model(
        vec![node(
            "If",
            &["cond"],
            &["s"],
            vec![branch("then_branch", "a"), branch("else_branch", "x")],
        )],
        vec![cond.clone(), value("x", &[2])],
        vec![sequence_value("s")],
        vec![
            floats("a", &[2], vec![1.0, 2.0]),
            floats("b", &[2], vec![3.0, 4.0]),
        ],
    );
    let result = imported(&m);
    assert_eq!(labels(&result), ["s[0]", "s[1]"]);
    let flag = |v: bool| {
        Tensor::from_numbers(
            &TensorType::new(vec![], ElementType::I1),
            [f64::from(u8::from(v))],
        )
    };
    let x = vector(&[5.0, 6.0]);
    let out = interpret(&result.module, 0, &[flag(true), x.clone()]).expect("runs");
    assert_eq!(
        (numbers(&out[0]), numbers(&out[1])),
        (vec![1.0, 2.0], vec![3.0, 4.0])
    );
    let out = interpret(&result.module, 0, &[flag(false), x]).expect("runs");
    assert_eq!(numbers(&out[0]), [5.0, 6.0]);

    // An empty optional on one branch, a value on the other: the condition must be known.
    let then_empty = body_attr(
        "then_branch",
        vec![NodeProto {
            attribute: vec![AttributeProto {
                name: "type".into(),
                r#type: AttributeType::TypeProto as i32,
                ..Default::default()
            }],
            ..node("Optional", &[], &["out"], vec![])
        }],
        &[],
        &["out"],
    );
    let else_full = body_attr(
        "else_branch",
        vec![node("Optional", &["a"], &["out"], vec![])],
        &[],
        &["out"],
    );
    let m = model(
        vec![node("If", &["cond"], &["o"], vec![then_empty, else_full])],
        vec![cond],
        vec![optional_value("o", &[2])],
        vec![floats("a", &[2], vec![1.0, 2.0])],
    );
    let error = import(&m, &options(), &registry())
        .err()
        .expect("needs the condition");
    assert!(
        error
            .to_string()
            .contains("an optional with a value and an empty one")
            && error
                .to_string()
                .contains("tessera needs it known at import time"),
        "{error}"
    );
}

#[test]
fn a_tensor_op_given_a_sequence_names_the_input() {
    let m = model(
        vec![
            node("SequenceConstruct", &["x", "x"], &["s"], vec![]),
            node("Relu", &["s"], &["y"], vec![]),
        ],
        vec![value("x", &[2])],
        vec![value("y", &[2])],
        vec![],
    );
    let error = import(&m, &options(), &registry()).err().expect("invalid");
    assert!(
        matches!(&error, ImportError::Node { node, message }
            if node.contains("Relu") && message.contains("its input 's' is a sequence, not a tensor")),
        "{error}"
    );
}
