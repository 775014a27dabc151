//! Property tests over generated modules: random dataflow graphs written in random (valid)
//! styles round-trip, and every style of the same graph prints the same canonical text.

use crate::common::{load_text, print};
use crate::roundtrip::assert_round_trip;
use proptest::prelude::*;

/// One op of a generated function; operands index earlier values (parameters first: all
/// values are named `%v<index>`).
#[derive(Clone, Debug)]
enum GenOp {
    Unary(&'static str, usize),
    Binary(&'static str, usize, usize),
    /// `reduce_sum` with `keepdims = true` over one axis: the shape stays broadcastable.
    ReduceKeep(usize, i64),
    Softmax(usize, i64),
    Splat(f32),
    Nested(Vec<f32>),
}

/// A function over values of one shape (reductions keep broadcast-compatible shapes).
#[derive(Clone, Debug)]
struct GenFunc {
    shape: Vec<u64>,
    params: usize,
    ops: Vec<GenOp>,
}

/// How the text is written: everything here must not change the canonical print.
#[derive(Clone, Debug)]
struct Style {
    write_types: Vec<bool>,
    attrs_reversed: bool,
    comments: bool,
    indent: usize,
    float_exponent: bool,
}

fn gen_func() -> impl Strategy<Value = GenFunc> {
    (prop::collection::vec(1u64..4, 1..4), 1usize..4).prop_flat_map(|(shape, params)| {
        let rank = shape.len() as i64;
        let count: usize = shape.iter().product::<u64>() as usize;
        let op = move |available: usize| {
            prop_oneof![
                (
                    prop::sample::select(vec!["neg", "exp", "tanh", "abs", "floor"]),
                    0..available
                )
                    .prop_map(|(n, a)| GenOp::Unary(n, a)),
                (
                    prop::sample::select(vec!["add", "sub", "mul", "max"]),
                    0..available,
                    0..available
                )
                    .prop_map(|(n, a, b)| GenOp::Binary(n, a, b)),
                (0..available, -rank..rank).prop_map(|(a, axis)| GenOp::ReduceKeep(a, axis)),
                (0..available, -rank..rank).prop_map(|(a, axis)| GenOp::Softmax(a, axis)),
                any::<f32>().prop_map(GenOp::Splat),
                prop::collection::vec(any::<f32>(), count).prop_map(GenOp::Nested),
            ]
        };
        // Ops may use any earlier value: build them one at a time.
        let ops = (0..6usize).map(move |i| op(params + i)).collect::<Vec<_>>();
        (Just(shape), Just(params), ops, 1usize..=6).prop_map(|(shape, params, mut ops, n)| {
            ops.truncate(n);
            GenFunc { shape, params, ops }
        })
    })
}

fn gen_style() -> impl Strategy<Value = Style> {
    (
        prop::collection::vec(any::<bool>(), 6),
        any::<bool>(),
        any::<bool>(),
        0usize..5,
        any::<bool>(),
    )
        .prop_map(
            |(write_types, attrs_reversed, comments, indent, float_exponent)| Style {
                write_types,
                attrs_reversed,
                comments,
                indent,
                float_exponent,
            },
        )
}

fn float_text(v: f32, style: &Style) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else if style.float_exponent {
        format!("{v:e}")
    } else {
        // Not the shortest form: the printer must find that itself.
        format!("{:?}", f64::from(v))
    }
}

/// Writes `func` in `style`; every value has the type of `shapes[i]`.
fn render(func: &GenFunc, style: &Style) -> String {
    let ty = |shape: &[u64]| {
        let dims: String = shape.iter().map(|d| format!("{d}x")).collect();
        format!("tensor<{dims}f32>")
    };
    let mut shapes: Vec<Vec<u64>> = vec![func.shape.clone(); func.params];
    let params: Vec<String> = (0..func.params)
        .map(|i| format!("%v{i}: {}", ty(&func.shape)))
        .collect();
    let mut body = String::new();
    let pad = " ".repeat(style.indent);
    for (i, op) in func.ops.iter().enumerate() {
        let rank = func.shape.len() as i64;
        let (text, shape) = match op {
            GenOp::Unary(name, a) => (format!("array.{name} %v{a}"), shapes[*a].clone()),
            GenOp::Binary(name, a, b) => {
                let shape = shapes[*a]
                    .iter()
                    .zip(&shapes[*b])
                    .map(|(x, y)| *x.max(y))
                    .collect();
                (format!("array.{name} %v{a}, %v{b}"), shape)
            }
            GenOp::ReduceKeep(a, axis) => {
                let mut shape = shapes[*a].clone();
                shape[(axis + rank) as usize % rank as usize] = 1;
                let attrs = if style.attrs_reversed {
                    format!("{{keepdims = true, axes = [{axis}]}}")
                } else {
                    format!("{{axes = [{axis}], keepdims = true}}")
                };
                (format!("array.reduce_sum %v{a} {attrs}"), shape)
            }
            GenOp::Softmax(a, axis) => (
                format!("nn.softmax %v{a} {{axis = {axis}}}"),
                shapes[*a].clone(),
            ),
            GenOp::Splat(v) => (
                format!("array.constant dense<{}>", float_text(*v, style)),
                func.shape.clone(),
            ),
            GenOp::Nested(values) => {
                let mut text = String::new();
                nest(&mut text, values, &func.shape, style);
                (format!("array.constant dense<{text}>"), func.shape.clone())
            }
        };
        let needs_type = matches!(op, GenOp::Splat(_) | GenOp::Nested(_));
        let written = if needs_type || style.write_types[i] {
            format!(" : {}", ty(&shape))
        } else {
            String::new()
        };
        if style.comments {
            body.push_str(&format!("{pad}// op {i}\n"));
        }
        body.push_str(&format!("{pad}%v{} = {text}{written}\n", func.params + i));
        shapes.push(shape);
    }
    let last = shapes.len() - 1;
    let params_text = params.join(",\n    ");
    format!(
        "func @gen({params_text}) -> {} {{\n{body}{pad}return %v{last} : {}\n}}\n",
        ty(&shapes[last]),
        ty(&shapes[last])
    )
}

fn nest(out: &mut String, values: &[f32], shape: &[u64], style: &Style) {
    match shape.split_first() {
        None => out.push_str(&float_text(values[0], style)),
        Some((&n, inner)) => {
            let chunk: usize = inner.iter().product::<u64>() as usize;
            out.push('[');
            for i in 0..n as usize {
                if i > 0 {
                    out.push_str(", ");
                }
                nest(out, &values[i * chunk..(i + 1) * chunk], inner, style);
            }
            out.push(']');
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn generated_modules_round_trip(func in gen_func(), style in gen_style()) {
        let text = render(&func, &style);
        assert_round_trip("generated.tsr", &text);
    }

    #[test]
    fn canonical_print_does_not_depend_on_style(func in gen_func(), a in gen_style(), b in gen_style()) {
        let (ta, tb) = (render(&func, &a), render(&func, &b));
        let ma = load_text("a.tsr", ta.as_bytes()).unwrap_or_else(|e| panic!("{e}\n{ta}"));
        let mb = load_text("b.tsr", tb.as_bytes()).unwrap_or_else(|e| panic!("{e}\n{tb}"));
        prop_assert_eq!(print(&ma), print(&mb));
    }
}
