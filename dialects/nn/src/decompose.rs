//! How `nn` layers that are compositions become `array` ops (the `tessera-decompose` pass):
//! dense, activations, normalizations, attention and grouped convolution. Each decomposition is the formula in
//! the op's documentation, written with the numerically stable forms (maximum subtracted
//! before `exp`, centered variance). Fusion later merges the elementwise parts again.

use crate::activation::{Activation, ActivationKind};
use crate::attention::Attention;
use crate::conv::{GroupConv2d, CONV2D};
use crate::dense::Dense;
use crate::norm::{BatchNorm, LayerNorm};
use crate::window::{window_geometry, WindowError};
use tessera::attr::{Attribute, DenseValue, Scalar};
use tessera::dialect::OpDef;
use tessera::infer::normalize_axis;
use tessera::ir::ValueId;
use tessera::transforms::decompose::{Decompose, DecomposeError, DecomposeOp, GraphBuilder};
use tessera::types::{ElementType, TensorType};
use tessera_array::constant::CONSTANT;
use tessera_array::elementwise::{ADD, CAST, DIV, ERF, EXP, LOG, MAX, MUL, NEG, RSQRT, SUB, TANH};
use tessera_array::layout::{CONCAT, PAD, RESHAPE, SLICE, TRANSPOSE};
use tessera_array::matmul::MATMUL;
use tessera_array::reduce::{REDUCE_MAX, REDUCE_MEAN, REDUCE_SUM};

type Built = Result<ValueId, DecomposeError>;

/// Shorthands over a graph builder for the ops decompositions use.
struct Ops<'b, 'f> {
    b: &'b mut GraphBuilder<'f>,
}

impl Ops<'_, '_> {
    fn unary(&mut self, def: &'static dyn OpDef, x: ValueId) -> Built {
        self.b.op(def, &[x], &[], None, None)
    }

    fn binary(&mut self, def: &'static dyn OpDef, x: ValueId, y: ValueId) -> Built {
        self.b.op(def, &[x, y], &[], None, None)
    }

    /// A rank-0 constant of `element` type, broadcast by whatever uses it.
    fn scalar(&mut self, element: ElementType, value: f64) -> Built {
        let literal = DenseValue::Splat(Scalar::Float(value));
        self.b.op(
            &CONSTANT,
            &[],
            &[],
            Some(literal),
            Some(TensorType::new(vec![], element)),
        )
    }

    fn reduce(&mut self, def: &'static dyn OpDef, x: ValueId, axes: &[usize]) -> Built {
        let axes = Attribute::List(axes.iter().map(|&a| Attribute::Int(a as i64)).collect());
        self.b.op(
            def,
            &[x],
            &[("axes", axes), ("keepdims", Attribute::Bool(true))],
            None,
            None,
        )
    }

    fn reshape(&mut self, x: ValueId, shape: Vec<u64>) -> Built {
        let ty = TensorType::new(shape, self.b.ty(x).element);
        self.b.op(&RESHAPE, &[x], &[], None, Some(ty))
    }

    /// `x` converted to `element`.
    fn cast(&mut self, x: ValueId, element: ElementType) -> Built {
        let ty = self.b.ty(x).with_element(element);
        self.b.op(&CAST, &[x], &[], None, Some(ty))
    }

    fn element(&self, x: ValueId) -> ElementType {
        self.b.ty(x).element
    }

    /// `1 / (1 + e^(-x))`.
    fn sigmoid(&mut self, x: ValueId) -> Built {
        let one = self.scalar(self.element(x), 1.0)?;
        let minus = self.unary(&NEG, x)?;
        let exp = self.unary(&EXP, minus)?;
        let denominator = self.binary(&ADD, one, exp)?;
        self.binary(&DIV, one, denominator)
    }

    /// `x - max_axis(x)`, the stable shift of softmax.
    fn shifted(&mut self, x: ValueId, axis: usize) -> Built {
        let max = self.reduce(&REDUCE_MAX, x, &[axis])?;
        self.binary(&SUB, x, max)
    }
}

/// The op's `axis` attribute (its default applied), normalized for a rank-`rank` operand.
fn axis(op: &DecomposeOp<'_>, rank: usize) -> Result<usize, DecomposeError> {
    let axis = op.int("axis")?;
    normalize_axis(axis, rank).ok_or_else(|| DecomposeError {
        op: format!("{}.{}", op.schema.dialect, op.schema.name),
        message: format!("axis {axis} is out of range for rank {rank}"),
    })
}

impl Decompose for Dense {
    fn lowering(&self) -> &'static str {
        "`array.matmul` (leading dimensions folded into one by `array.reshape`) and `array.add` of the bias: fusion merges the bias add into the matmul's consumer loop"
    }

    fn decompose(
        &self,
        b: &mut GraphBuilder<'_>,
        op: &DecomposeOp<'_>,
    ) -> Result<Vec<ValueId>, DecomposeError> {
        let mut ops = Ops { b };
        let (x, w) = (op.operands[0], op.operands[1]);
        let x_shape = ops.b.ty(x).shape.clone();
        let k = x_shape[x_shape.len() - 1];
        let rows: u64 = x_shape[..x_shape.len() - 1].iter().product();
        // matmul wants [M, K]: fold every leading dimension into M, and unfold after.
        let product = if x_shape.len() == 2 {
            ops.binary(&MATMUL, x, w)?
        } else {
            let matrix = ops.reshape(x, vec![rows, k])?;
            let product = ops.binary(&MATMUL, matrix, w)?;
            ops.reshape(product, op.result_types[0].shape.clone())?
        };
        let result = match op.operands.get(2) {
            Some(&bias) => ops.binary(&ADD, product, bias)?,
            None => product,
        };
        Ok(vec![result])
    }
}

impl Decompose for Activation {
    fn lowering(&self) -> &'static str {
        "`array` elementwise ops (`max`, `exp`, `div`, `erf`/`tanh`, ...), in f32 for f16 and bf16 (rounded once); softmax and log_softmax subtract `reduce_max` before `exp`; softmax multiplies by the reciprocal of each sum"
    }

    fn decompose(
        &self,
        b: &mut GraphBuilder<'_>,
        op: &DecomposeOp<'_>,
    ) -> Result<Vec<ValueId>, DecomposeError> {
        let mut ops = Ops { b };
        let given = op.operands[0];
        let narrow = ops.element(given);
        // f16 and bf16 activations are computed in f32 and rounded once, as the interpreter
        // does: each step rounded to 8 or 11 bits would drift by several ulps (softmax's exp,
        // sum, reciprocal and product). Relu is exact in any type.
        let element = match self.kind {
            ActivationKind::Relu => narrow,
            _ => narrow.accumulator(),
        };
        let x = if element == narrow {
            given
        } else {
            ops.cast(given, element)?
        };
        let rank = ops.b.ty(x).rank();
        let result = match self.kind {
            ActivationKind::Relu => {
                let zero = ops.scalar(element, 0.0)?;
                ops.binary(&MAX, x, zero)?
            }
            ActivationKind::Sigmoid => ops.sigmoid(x)?,
            ActivationKind::Silu => {
                let s = ops.sigmoid(x)?;
                ops.binary(&MUL, x, s)?
            }
            ActivationKind::Gelu => {
                let tanh_form = op
                    .attr("approximate")
                    .and_then(|a| a.as_str().map(|s| s == "tanh"))
                    .unwrap_or(false);
                let inner = if tanh_form {
                    // tanh(sqrt(2/pi) (x + 0.044715 x^3))
                    let cube = ops.binary(&MUL, x, x)?;
                    let cube = ops.binary(&MUL, cube, x)?;
                    let c = ops.scalar(element, 0.044715)?;
                    let term = ops.binary(&MUL, c, cube)?;
                    let sum = ops.binary(&ADD, x, term)?;
                    let k = ops.scalar(element, (2.0 / std::f64::consts::PI).sqrt())?;
                    let arg = ops.binary(&MUL, k, sum)?;
                    ops.unary(&TANH, arg)?
                } else {
                    let k = ops.scalar(element, std::f64::consts::FRAC_1_SQRT_2)?;
                    let arg = ops.binary(&MUL, x, k)?;
                    ops.unary(&ERF, arg)?
                };
                let one = ops.scalar(element, 1.0)?;
                let half = ops.scalar(element, 0.5)?;
                let factor = ops.binary(&ADD, one, inner)?;
                let half_x = ops.binary(&MUL, half, x)?;
                ops.binary(&MUL, half_x, factor)?
            }
            ActivationKind::Softmax => {
                let axis = axis(op, rank)?;
                let shifted = ops.shifted(x, axis)?;
                let exp = ops.unary(&EXP, shifted)?;
                let sum = ops.reduce(&REDUCE_SUM, exp, &[axis])?;
                // One division per row, then multiplications: a vector division costs several
                // multiplications' time (softmax over 512x512: 180 -> 150 us).
                let one = ops.scalar(element, 1.0)?;
                let reciprocal = ops.binary(&DIV, one, sum)?;
                ops.binary(&MUL, exp, reciprocal)?
            }
            ActivationKind::LogSoftmax => {
                let axis = axis(op, rank)?;
                let shifted = ops.shifted(x, axis)?;
                let exp = ops.unary(&EXP, shifted)?;
                let sum = ops.reduce(&REDUCE_SUM, exp, &[axis])?;
                let log = ops.unary(&LOG, sum)?;
                ops.binary(&SUB, shifted, log)?
            }
        };
        if element == narrow {
            return Ok(vec![result]);
        }
        Ok(vec![ops.cast(result, narrow)?])
    }
}

impl Decompose for LayerNorm {
    fn lowering(&self) -> &'static str {
        "`array.reduce_mean`, centering, `reduce_mean` of squares, `rsqrt`, scale and offset"
    }

    fn decompose(
        &self,
        b: &mut GraphBuilder<'_>,
        op: &DecomposeOp<'_>,
    ) -> Result<Vec<ValueId>, DecomposeError> {
        let mut ops = Ops { b };
        let (x, gamma, beta) = (op.operands[0], op.operands[1], op.operands[2]);
        let rank = ops.b.ty(x).rank();
        let axes: Vec<usize> = (axis(op, rank)?..rank).collect();
        let epsilon = op.float("epsilon")?;
        let element = ops.element(x);
        let mean = ops.reduce(&REDUCE_MEAN, x, &axes)?;
        let centered = ops.binary(&SUB, x, mean)?;
        let square = ops.binary(&MUL, centered, centered)?;
        let variance = ops.reduce(&REDUCE_MEAN, square, &axes)?;
        let eps = ops.scalar(element, epsilon)?;
        let shifted = ops.binary(&ADD, variance, eps)?;
        let inverse = ops.unary(&RSQRT, shifted)?;
        let normalized = ops.binary(&MUL, centered, inverse)?;
        let scaled = ops.binary(&MUL, normalized, gamma)?;
        Ok(vec![ops.binary(&ADD, scaled, beta)?])
    }
}

impl Decompose for BatchNorm {
    fn lowering(&self) -> &'static str {
        "`array` elementwise ops: `(x - mean) * (rsqrt(variance + epsilon) * scale) + offset`"
    }

    fn decompose(
        &self,
        b: &mut GraphBuilder<'_>,
        op: &DecomposeOp<'_>,
    ) -> Result<Vec<ValueId>, DecomposeError> {
        let mut ops = Ops { b };
        let [x, scale, offset, mean, variance] = [0, 1, 2, 3, 4].map(|i| op.operands[i]);
        let epsilon = op.float("epsilon")?;
        let eps = ops.scalar(ops.element(x), epsilon)?;
        let shifted = ops.binary(&ADD, variance, eps)?;
        let inverse = ops.unary(&RSQRT, shifted)?;
        let factor = ops.binary(&MUL, inverse, scale)?;
        let centered = ops.binary(&SUB, x, mean)?;
        let scaled = ops.binary(&MUL, centered, factor)?;
        Ok(vec![ops.binary(&ADD, scaled, offset)?])
    }
}

impl Decompose for Attention {
    fn lowering(&self) -> &'static str {
        "`array.transpose`, `array.matmul`, a scale, a constant causal mask when asked, then softmax's steps with its normalization after the second `array.matmul`: `(exp(s - max(s)) v) * (1 / sum)`"
    }

    fn decompose(
        &self,
        b: &mut GraphBuilder<'_>,
        op: &DecomposeOp<'_>,
    ) -> Result<Vec<ValueId>, DecomposeError> {
        let mut ops = Ops { b };
        let (q, k, v) = (op.operands[0], op.operands[1], op.operands[2]);
        let q_ty = ops.b.ty(q).clone();
        let k_ty = ops.b.ty(k).clone();
        let rank = q_ty.rank();
        let (lq, lk, d) = (
            q_ty.shape[rank - 2],
            k_ty.shape[rank - 2],
            q_ty.shape[rank - 1],
        );
        let mut perm: Vec<Attribute> = (0..rank as i64).map(Attribute::Int).collect();
        perm.swap(rank - 2, rank - 1);
        let kt = ops.b.op(
            &TRANSPOSE,
            &[k],
            &[("perm", Attribute::List(perm))],
            None,
            None,
        )?;
        let scores = ops.binary(&MATMUL, q, kt)?;
        let scale = op
            .attr("scale")
            .and_then(|s| s.as_f64())
            .unwrap_or(1.0 / (d as f64).sqrt());
        let scale = ops.scalar(q_ty.element, scale)?;
        let mut scaled = ops.binary(&MUL, scores, scale)?;
        if op.boolean("causal")? {
            // 0 where key j <= query i, -inf after (top-left aligned).
            let mask: Vec<Scalar> = (0..lq)
                .flat_map(|i| {
                    (0..lk).map(move |j| Scalar::Float(if j > i { f64::NEG_INFINITY } else { 0.0 }))
                })
                .collect();
            let ty = TensorType::new(vec![lq, lk], q_ty.element);
            let mask = ops.b.op(
                &CONSTANT,
                &[],
                &[],
                Some(DenseValue::Elements(mask)),
                Some(ty),
            )?;
            scaled = ops.binary(&ADD, scaled, mask)?;
        }
        // softmax(s) v with the normalization moved past the matmul (as flash attention
        // does): (exp(s - max) v) / sum scales lq x d values instead of lq x lk, and row fusion
        // then computes each row block from scores to output without writing the
        // probabilities.
        let axis = rank - 1;
        let shifted = ops.shifted(scaled, axis)?;
        let exp = ops.unary(&EXP, shifted)?;
        let sum = ops.reduce(&REDUCE_SUM, exp, &[axis])?;
        let unnormalized = ops.binary(&MATMUL, exp, v)?;
        let one = ops.scalar(q_ty.element, 1.0)?;
        let reciprocal = ops.binary(&DIV, one, sum)?;
        Ok(vec![ops.binary(&MUL, unnormalized, reciprocal)?])
    }
}

/// Attribute `name` of `op` as two positive integers, `[1, 1]` when absent.
fn window_pair(op: &DecomposeOp<'_>, name: &str) -> Result<[u64; 2], DecomposeError> {
    match op.attr(name).map(|a| a.as_int_list()) {
        None => Ok([1, 1]),
        Some(Some(v)) if v.len() == 2 && v.iter().all(|&d| d > 0) => Ok([v[0] as u64, v[1] as u64]),
        Some(_) => Err(DecomposeError {
            op: "nn.group_conv2d".into(),
            message: format!("attribute '{name}' is not two positive integers"),
        }),
    }
}

/// An integer list attribute.
fn int_list(values: &[u64]) -> Attribute {
    Attribute::List(values.iter().map(|&v| Attribute::Int(v as i64)).collect())
}

impl Ops<'_, '_> {
    /// The slice `x[start:limit:stride]`.
    fn slice(&mut self, x: ValueId, start: &[u64], limit: &[u64], stride: &[u64]) -> Built {
        let attrs = [
            ("start", int_list(start)),
            ("limit", int_list(limit)),
            ("stride", int_list(stride)),
        ];
        self.b.op(&SLICE, &[x], &attrs, None, None)
    }
}

impl Decompose for GroupConv2d {
    fn lowering(&self) -> &'static str {
        "the input padded (`array.pad`), then, when each group is one input channel (depthwise), one strided `array.slice` of it per filter tap times that tap's filter row, summed (`array.mul`, `array.add`: fusion makes them one loop nest); otherwise one `nn.conv2d` per group on its channel slices, joined by `array.concat`; the bias added"
    }

    fn decompose(
        &self,
        b: &mut GraphBuilder<'_>,
        op: &DecomposeOp<'_>,
    ) -> Result<Vec<ValueId>, DecomposeError> {
        let fail = |message: String| DecomposeError {
            op: "nn.group_conv2d".into(),
            message,
        };
        let mut ops = Ops { b };
        let (x, w) = (op.operands[0], op.operands[1]);
        let (xt, wt) = (ops.b.ty(x).clone(), ops.b.ty(w).clone());
        let (&[n, h, wd, c], &[kh, kw, cg, f]) = (xt.shape.as_slice(), wt.shape.as_slice()) else {
            return Err(fail(format!("{xt} and {wt} are not NHWC and HWCF")));
        };
        let groups = op.int("groups")? as u64;
        let strides = window_pair(op, "strides")?;
        let dilations = window_pair(op, "dilations")?;
        let padding = op.attr("padding").unwrap_or(Attribute::Str("valid".into()));
        let geometry = window_geometry(&padding, [h, wd], [kh, kw], strides, dilations).map_err(
            |e| match e {
                WindowError::Padding(m) | WindowError::TooLarge(m) => fail(m),
            },
        )?;
        let [top, bottom, left, right] = geometry.padding;
        let [oh, ow] = geometry.output;
        let xp = if geometry.padding.iter().any(|&p| p > 0) {
            let attrs = [
                ("low", int_list(&[0, top, left, 0])),
                ("high", int_list(&[0, bottom, right, 0])),
            ];
            ops.b.op(&PAD, &[x], &attrs, None, None)?
        } else {
            x
        };
        let y = if cg == 1 && groups == c {
            let m = f / c;
            let mut sum = None;
            for p in 0..kh {
                for q in 0..kw {
                    let (row, col) = (p * dilations[0], q * dilations[1]);
                    // One past the last row and column this tap reads.
                    let end = |first: u64, out: u64, stride: u64| {
                        first + out.saturating_sub(1) * stride + u64::from(out > 0)
                    };
                    let window = ops.slice(
                        xp,
                        &[0, row, col, 0],
                        &[n, end(row, oh, strides[0]), end(col, ow, strides[1]), c],
                        &[1, strides[0], strides[1], 1],
                    )?;
                    let tap = ops.slice(w, &[p, q, 0, 0], &[p + 1, q + 1, 1, f], &[1, 1, 1, 1])?;
                    // One filter per channel: the tap's [1, 1, 1, F] row broadcasts over
                    // the window as it is (reshaped to [F], fusion propagated the reshape
                    // into every operand, and the sum's 7-d loops no longer fused with what
                    // follows).
                    let (lhs, rhs) = if m == 1 {
                        (window, tap)
                    } else {
                        (
                            ops.reshape(window, vec![n, oh, ow, c, 1])?,
                            ops.reshape(tap, vec![c, m])?,
                        )
                    };
                    let product = ops.binary(&MUL, lhs, rhs)?;
                    sum = Some(match sum {
                        None => product,
                        Some(s) => ops.binary(&ADD, s, product)?,
                    });
                }
            }
            let sum = sum.ok_or_else(|| fail("an empty filter window".into()))?;
            if m == 1 {
                sum
            } else {
                ops.reshape(sum, vec![n, oh, ow, f])?
            }
        } else {
            let fg = f / groups;
            let attrs = [
                ("strides", int_list(&strides)),
                ("dilations", int_list(&dilations)),
            ];
            let padded = ops.b.ty(xp).shape.clone();
            let mut parts = Vec::with_capacity(groups as usize);
            for g in 0..groups {
                let xs = ops.slice(
                    xp,
                    &[0, 0, 0, g * cg],
                    &[n, padded[1], padded[2], (g + 1) * cg],
                    &[1; 4],
                )?;
                let ws = ops.slice(w, &[0, 0, 0, g * fg], &[kh, kw, cg, (g + 1) * fg], &[1; 4])?;
                parts.push(ops.b.op(&CONV2D, &[xs, ws], &attrs, None, None)?);
            }
            match parts.as_slice() {
                [one] => *one,
                _ => ops
                    .b
                    .op(&CONCAT, &parts, &[("axis", Attribute::Int(3))], None, None)?,
            }
        };
        let y = match op.operands.get(2) {
            Some(&bias) => ops.binary(&ADD, y, bias)?,
            None => y,
        };
        Ok(vec![y])
    }
}
