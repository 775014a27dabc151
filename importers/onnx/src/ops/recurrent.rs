//! Recurrent ONNX layers: `RNN`, `GRU` and `LSTM`, unrolled over the (static) sequence: each
//! step is matrix products of the input and the previous state with the gates' weights, the
//! gates' activations and the state update, forward, reverse or both directions. Steps past
//! a batch entry's `sequence_lens` keep its state and output zeros (forward only).

use super::{input, Inputs};
use crate::graph::{invalid, unsupported, Graph, NodeResult, Val};
use crate::node::Node;
use tessera::attr::{Attribute, Scalar};
use tessera::types::{ElementType, TensorType};

/// Which layer.
#[derive(Clone, Copy, PartialEq)]
enum Cell {
    Rnn,
    Gru,
    Lstm,
}

impl Cell {
    /// Gates per hidden unit in W, R and each half of B.
    fn gates(self) -> u64 {
        match self {
            Cell::Rnn => 1,
            Cell::Gru => 3,
            Cell::Lstm => 4,
        }
    }

    /// The activations it applies, by default.
    fn default_activations(self) -> &'static [&'static str] {
        match self {
            Cell::Rnn => &["Tanh"],
            Cell::Gru => &["Sigmoid", "Tanh"],
            Cell::Lstm => &["Sigmoid", "Tanh", "Tanh"],
        }
    }
}

/// An activation of the list ONNX allows, with its `alpha` and `beta`.
#[derive(Clone)]
struct Activation {
    name: String,
    alpha: Option<f64>,
    beta: Option<f64>,
}

impl Activation {
    fn apply(&self, g: &mut Graph, x: &Val) -> NodeResult<Val> {
        let element = g.ty(x).element;
        let scalar = |g: &Graph, v: f64| g.scalar(v, element);
        match self.name.to_ascii_lowercase().as_str() {
            "sigmoid" => g.unary("nn.sigmoid", x),
            "tanh" => g.unary("array.tanh", x),
            "relu" => g.unary("nn.relu", x),
            "leakyrelu" => {
                let alpha = scalar(g, self.alpha.unwrap_or(0.01));
                let zero = scalar(g, 0.0);
                let negative = g.compare(x, &zero, "lt")?;
                let scaled = g.binary("array.mul", x, &alpha)?;
                g.select(&negative, &scaled, x)
            }
            "hardsigmoid" => {
                let (a, b) = (
                    scalar(g, self.alpha.unwrap_or(0.2)),
                    scalar(g, self.beta.unwrap_or(0.5)),
                );
                let (zero, one) = (scalar(g, 0.0), scalar(g, 1.0));
                let ax = g.binary("array.mul", &a, x)?;
                let line = g.binary("array.add", &ax, &b)?;
                let capped = g.binary("array.min", &line, &one)?;
                g.binary("array.max", &capped, &zero)
            }
            "affine" => {
                let (a, b) = (
                    scalar(g, self.alpha.unwrap_or(1.0)),
                    scalar(g, self.beta.unwrap_or(0.0)),
                );
                let ax = g.binary("array.mul", &a, x)?;
                g.binary("array.add", &ax, &b)
            }
            "scaledtanh" => {
                let (a, b) = (
                    scalar(g, self.alpha.unwrap_or(1.0)),
                    scalar(g, self.beta.unwrap_or(1.0)),
                );
                let bx = g.binary("array.mul", &b, x)?;
                let t = g.unary("array.tanh", &bx)?;
                g.binary("array.mul", &a, &t)
            }
            other => unsupported(format!("the recurrent activation '{other}'")),
        }
    }
}

/// The node's activations: `per_direction` of them for each direction.
fn activations(node: &Node, cell: Cell, directions: usize) -> NodeResult<Vec<Vec<Activation>>> {
    let defaults = cell.default_activations();
    let names: Vec<String> = match node.attr("activations") {
        Some(a) if !a.strings.is_empty() => a
            .strings
            .iter()
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect(),
        _ => (0..directions)
            .flat_map(|_| defaults.iter().map(|s| s.to_string()))
            .collect(),
    };
    let per = defaults.len();
    if names.len() != per * directions {
        return invalid(format!(
            "{} activations where {directions} direction(s) need {}",
            names.len(),
            per * directions
        ));
    }
    let floats = |name: &str| {
        node.attr(name)
            .map(|a| a.floats.clone())
            .unwrap_or_default()
    };
    let (alphas, betas) = (floats("activation_alpha"), floats("activation_beta"));
    Ok((0..directions)
        .map(|d| {
            (0..per)
                .map(|k| {
                    let i = d * per + k;
                    Activation {
                        name: names[i].clone(),
                        alpha: alphas.get(i).map(|&v| f64::from(v)),
                        beta: betas.get(i).map(|&v| f64::from(v)),
                    }
                })
                .collect()
        })
        .collect())
}

/// Slice `[from, to)` of axis `axis` of `x`.
fn part(g: &mut Graph, x: &Val, axis: usize, from: u64, to: u64) -> NodeResult<Val> {
    let shape = g.ty(x).shape;
    if axis >= shape.len() || to > shape[axis] {
        return invalid(format!(
            "{} has no [{from}, {to}) along axis {axis}",
            g.ty(x)
        ));
    }
    let mut start = vec![0; shape.len()];
    let mut limit = shape.clone();
    start[axis] = from;
    limit[axis] = to;
    g.slice(x, &start, &limit, &vec![1; shape.len()])
}

/// One direction's weights: W and R transposed per gate (`[in, hidden]`, `[hidden, hidden]`),
/// the input and recurrence biases per gate, LSTM's peepholes.
struct Weights {
    w: Vec<Val>,
    r: Vec<Val>,
    wb: Vec<Val>,
    rb: Vec<Val>,
    peephole: Vec<Val>,
}

/// The weights of direction `d`.
fn weights(g: &mut Graph, inputs: &Inputs, cell: Cell, d: u64, hidden: u64) -> NodeResult<Weights> {
    let (w_all, r_all) = (input(inputs, 1)?, input(inputs, 2)?);
    let element = g.ty(&w_all).element;
    let gates = cell.gates();
    let mut out = Weights {
        w: Vec::new(),
        r: Vec::new(),
        wb: Vec::new(),
        rb: Vec::new(),
        peephole: Vec::new(),
    };
    let bias = inputs.get(3).cloned().flatten();
    for k in 0..gates {
        for (all, list) in [(&w_all, &mut out.w), (&r_all, &mut out.r)] {
            let dir = part(g, all, 0, d, d + 1)?;
            let gate = part(g, &dir, 1, k * hidden, (k + 1) * hidden)?;
            let cols = g.ty(&gate).shape[2];
            let gate = g.reshape(&gate, vec![hidden, cols])?;
            list.push(g.transpose(&gate, &[1, 0])?);
        }
        for (half, list) in [(0, &mut out.wb), (1, &mut out.rb)] {
            let b = match &bias {
                Some(b) => {
                    let dir = part(g, b, 0, d, d + 1)?;
                    let from = (half * gates + k) * hidden;
                    let slice = part(g, &dir, 1, from, from + hidden)?;
                    g.reshape(&slice, vec![hidden])?
                }
                None => g.splat(Scalar::Float(0.0), TensorType::new(vec![hidden], element)),
            };
            list.push(b);
        }
    }
    if cell == Cell::Lstm {
        for k in 0..3 {
            let p = match inputs.get(7).cloned().flatten() {
                Some(p) => {
                    let dir = part(g, &p, 0, d, d + 1)?;
                    let slice = part(g, &dir, 1, k * hidden, (k + 1) * hidden)?;
                    g.reshape(&slice, vec![hidden])?
                }
                None => g.splat(Scalar::Float(0.0), TensorType::new(vec![hidden], element)),
            };
            out.peephole.push(p);
        }
    }
    Ok(out)
}

/// `x W_k + h R_k + Wb_k + Rb_k` for gate `k`.
fn gate(g: &mut Graph, w: &Weights, k: usize, x: &Val, h: &Val) -> NodeResult<Val> {
    let xw = g.op("array.matmul", &[x.clone(), w.w[k].clone()], &[], None)?;
    let hr = g.op("array.matmul", &[h.clone(), w.r[k].clone()], &[], None)?;
    let sum = g.binary("array.add", &xw, &hr)?;
    let sum = g.binary("array.add", &sum, &w.wb[k])?;
    g.binary("array.add", &sum, &w.rb[k])
}

/// `RNN`, `GRU`, `LSTM`: `Y [seq, directions, batch, hidden]`, `Y_h`, and LSTM's `Y_c`.
pub fn recurrent(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let cell = match node.proto.op_type.as_str() {
        "RNN" => Cell::Rnn,
        "GRU" => Cell::Gru,
        _ => Cell::Lstm,
    };
    if node.attr("clip").is_some() {
        return unsupported(format!("{} with clip", node.proto.op_type));
    }
    if node.int("input_forget", 0) != 0 {
        return unsupported("LSTM with input_forget");
    }
    let mut x = input(inputs, 0)?;
    let batchwise = node.int("layout", 0) != 0;
    if batchwise {
        x = g.transpose(&x, &[1, 0, 2])?;
    }
    let x_ty = g.ty(&x);
    if x_ty.rank() != 3 || !x_ty.element.is_float() {
        return invalid(format!("X is {x_ty}, not a float [seq, batch, input]"));
    }
    let (seq, batch) = (x_ty.shape[0], x_ty.shape[1]);
    let element = x_ty.element;
    let direction = node.string("direction", "forward");
    let order: Vec<bool> = match direction.as_str() {
        "forward" => vec![false],
        "reverse" => vec![true],
        "bidirectional" => vec![false, true],
        other => return invalid(format!("direction '{other}' is unknown")),
    };
    let hidden = match node.int("hidden_size", 0) {
        h if h > 0 => h as u64,
        _ => g.ty(&input(inputs, 2)?).shape.last().copied().unwrap_or(0),
    };
    let acts = activations(node, cell, order.len())?;
    let (dirs, gates) = (order.len() as u64, cell.gates());
    let expect = |g: &Graph, i: usize, what: &str, shape: Vec<u64>| -> NodeResult<()> {
        match inputs.get(i).cloned().flatten() {
            Some(v) if g.ty(&v).shape != shape => {
                invalid(format!("{what} is {}, not {shape:?}", g.ty(&v)))
            }
            _ => Ok(()),
        }
    };
    expect(g, 1, "W", vec![dirs, gates * hidden, x_ty.shape[2]])?;
    expect(g, 2, "R", vec![dirs, gates * hidden, hidden])?;
    expect(g, 3, "B", vec![dirs, 2 * gates * hidden])?;
    expect(g, 5, "initial_h", vec![dirs, batch, hidden])?;
    if cell == Cell::Lstm {
        expect(g, 6, "initial_c", vec![dirs, batch, hidden])?;
        expect(g, 7, "P", vec![dirs, 3 * hidden])?;
    }
    if let Some(lens) = inputs.get(4).cloned().flatten() {
        if g.ty(&lens).shape != [batch] {
            return invalid(format!("sequence_lens is {}, not [{batch}]", g.ty(&lens)));
        }
    }
    // Which batch entries each step still reads: None when every sequence is full.
    let lengths = inputs.get(4).cloned().flatten();
    let active: Option<Val> = match &lengths {
        Some(lens) => {
            let full = g
                .ints(lens, "sequence_lens")
                .is_ok_and(|l| l.iter().all(|&n| n == seq as i64));
            if full {
                None
            } else {
                if order.contains(&true) {
                    return unsupported("reverse recurrence with sequence_lens");
                }
                let lens = g.cast(lens, ElementType::I64)?;
                Some(g.reshape(&lens, vec![batch, 1])?)
            }
        }
        None => None,
    };
    let zero_state = g.splat(
        Scalar::Float(0.0),
        TensorType::new(vec![batch, hidden], element),
    );
    let initial = |g: &mut Graph, i: usize, d: u64| -> NodeResult<Val> {
        match inputs.get(i).cloned().flatten() {
            Some(v) => {
                let dir = part(g, &v, 0, d, d + 1)?;
                g.reshape(&dir, vec![batch, hidden])
            }
            None => Ok(zero_state.clone()),
        }
    };
    let (mut ys, mut last_h, mut last_c) = (Vec::new(), Vec::new(), Vec::new());
    for (d, &reverse) in order.iter().enumerate() {
        let w = weights(g, inputs, cell, d as u64, hidden)?;
        let f = &acts[d];
        let mut h = initial(g, 5, d as u64)?;
        let mut c = initial(g, 6, d as u64)?;
        let mut outputs = vec![None; seq as usize];
        let steps: Vec<u64> = if reverse {
            (0..seq).rev().collect()
        } else {
            (0..seq).collect()
        };
        for t in steps {
            let xt = part(g, &x, 0, t, t + 1)?;
            let xt = g.reshape(&xt, vec![batch, x_ty.shape[2]])?;
            let (new_h, new_c) = match cell {
                Cell::Rnn => {
                    let pre = gate(g, &w, 0, &xt, &h)?;
                    (f[0].apply(g, &pre)?, c.clone())
                }
                Cell::Gru => {
                    let z = gate(g, &w, 0, &xt, &h)?;
                    let z = f[0].apply(g, &z)?;
                    let r = gate(g, &w, 1, &xt, &h)?;
                    let r = f[0].apply(g, &r)?;
                    let xw = g.op("array.matmul", &[xt.clone(), w.w[2].clone()], &[], None)?;
                    let recurrent = if node.int("linear_before_reset", 0) != 0 {
                        let hr = g.op("array.matmul", &[h.clone(), w.r[2].clone()], &[], None)?;
                        let hr = g.binary("array.add", &hr, &w.rb[2])?;
                        g.binary("array.mul", &r, &hr)?
                    } else {
                        let rh = g.binary("array.mul", &r, &h)?;
                        let rhr = g.op("array.matmul", &[rh, w.r[2].clone()], &[], None)?;
                        g.binary("array.add", &rhr, &w.rb[2])?
                    };
                    let pre = g.binary("array.add", &xw, &recurrent)?;
                    let pre = g.binary("array.add", &pre, &w.wb[2])?;
                    let candidate = f[1].apply(g, &pre)?;
                    let one = g.scalar(1.0, element);
                    let keep = g.binary("array.sub", &one, &z)?;
                    let fresh = g.binary("array.mul", &keep, &candidate)?;
                    let kept = g.binary("array.mul", &z, &h)?;
                    (g.binary("array.add", &fresh, &kept)?, c.clone())
                }
                Cell::Lstm => {
                    // Gates in W: input, output, forget, cell; peepholes: input, output, forget.
                    let peep =
                        |g: &mut Graph, pre: Val, k: usize, state: &Val| -> NodeResult<Val> {
                            let p = g.binary("array.mul", &w.peephole[k], state)?;
                            g.binary("array.add", &pre, &p)
                        };
                    let i = gate(g, &w, 0, &xt, &h)?;
                    let i = peep(g, i, 0, &c)?;
                    let i = f[0].apply(g, &i)?;
                    let fg = gate(g, &w, 2, &xt, &h)?;
                    let fg = peep(g, fg, 2, &c)?;
                    let fg = f[0].apply(g, &fg)?;
                    let cand = gate(g, &w, 3, &xt, &h)?;
                    let cand = f[1].apply(g, &cand)?;
                    let kept = g.binary("array.mul", &fg, &c)?;
                    let fresh = g.binary("array.mul", &i, &cand)?;
                    let new_c = g.binary("array.add", &kept, &fresh)?;
                    let o = gate(g, &w, 1, &xt, &h)?;
                    let o = peep(g, o, 1, &new_c)?;
                    let o = f[0].apply(g, &o)?;
                    let squashed = f[2].apply(g, &new_c)?;
                    (g.binary("array.mul", &o, &squashed)?, new_c)
                }
            };
            let y = match &active {
                Some(lens) => {
                    let step = g.scalar(t as f64, ElementType::I64);
                    let live = g.compare(&step, lens, "lt")?;
                    h = g.select(&live, &new_h, &h)?;
                    c = g.select(&live, &new_c, &c)?;
                    g.select(&live, &new_h, &zero_state)?
                }
                None => {
                    h = new_h;
                    c = new_c;
                    h.clone()
                }
            };
            outputs[t as usize] = Some(g.reshape(&y, vec![1, 1, batch, hidden])?);
        }
        let steps: Vec<Val> = outputs.into_iter().flatten().collect();
        ys.push(concat(g, &steps, 0)?);
        last_h.push(g.reshape(&h, vec![1, batch, hidden])?);
        last_c.push(g.reshape(&c, vec![1, batch, hidden])?);
    }
    let mut y = concat(g, &ys, 1)?;
    let mut y_h = concat(g, &last_h, 0)?;
    let mut y_c = concat(g, &last_c, 0)?;
    if batchwise {
        y = g.transpose(&y, &[2, 0, 1, 3])?;
        y_h = g.transpose(&y_h, &[1, 0, 2])?;
        y_c = g.transpose(&y_c, &[1, 0, 2])?;
    }
    let mut outputs = vec![y, y_h];
    if cell == Cell::Lstm {
        outputs.push(y_c);
    }
    Ok(outputs)
}

/// `parts` joined along `axis` (one part is itself).
fn concat(g: &mut Graph, parts: &[Val], axis: i64) -> NodeResult<Val> {
    match parts {
        [one] => Ok(one.clone()),
        _ => g.op(
            "array.concat",
            parts,
            &[("axis", Attribute::Int(axis))],
            None,
        ),
    }
}
