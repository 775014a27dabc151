//! Reference semantics of the `nn` ops on host tensors: float math in f64, every result
//! rounded to its element type; softmax and normalization computed the stable way.

use crate::activation::{Activation, ActivationKind};
use crate::attention::Attention;
use crate::conv::{Conv2d, GroupConv2d};
use crate::dense::Dense;
use crate::norm::{BatchNorm, LayerNorm};
use crate::pool::{Pool, PoolKind};
use crate::window::{window_geometry, WindowError};
use std::f64::consts::{FRAC_1_SQRT_2, PI};
use tessera::attr::Attribute;
use tessera::exec::evaluate::{unverified, EvalContext, EvalError, Evaluate};
use tessera::exec::index::{element_count, AxisSplit};
use tessera::exec::math::{erf, maximum};
use tessera::exec::tensor::Tensor;
use tessera::types::TensorType;

/// The one float result of an op of type `ty`, from unrounded values.
fn one(ty: &TensorType, values: Vec<f64>) -> Result<Vec<Tensor>, EvalError> {
    Ok(vec![Tensor::from_f64(ty, values)])
}

/// Attribute `name` as two positive integers, `absent` when it is not written.
fn pair(ctx: &EvalContext<'_>, name: &str, absent: [u64; 2]) -> Result<[u64; 2], EvalError> {
    if ctx.attr(name).is_none() {
        return Ok(absent);
    }
    match ctx.int_list(name)?.as_slice() {
        &[a, b] if a > 0 && b > 0 => Ok([a as u64, b as u64]),
        _ => Err(unverified(format!(
            "attribute '{name}' is not two positive integers"
        ))),
    }
}

/// The logistic sigmoid without overflow: `e^-x` is only computed for `x >= 0`.
fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

impl Evaluate for Dense {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let (x, w) = (ctx.floats(0)?, ctx.floats(1)?);
        let bias = ctx.optional_floats(2)?;
        let (xt, wt) = (&ctx.operand(0)?.ty, &ctx.operand(1)?.ty);
        let ty = ctx.result_type(0)?;
        let (Some((&k, batch)), [_, n]) = (xt.shape.split_last(), wt.shape.as_slice()) else {
            return Err(unverified("operands of the wrong ranks"));
        };
        let (k, n, rows) = (k as usize, *n as usize, element_count(batch));
        let mut y = Vec::with_capacity(rows * n);
        for r in 0..rows {
            for j in 0..n {
                let sum: f64 = (0..k).map(|kk| x[r * k + kk] * w[kk * n + j]).sum();
                y.push(sum + bias.map_or(0.0, |b| b[j]));
            }
        }
        one(ty, y)
    }
}

impl Evaluate for Activation {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let x = ctx.floats(0)?;
        let ty = ctx.result_type(0)?;
        let elementwise = |f: &dyn Fn(f64) -> f64| one(ty, x.iter().map(|&a| f(a)).collect());
        match self.kind {
            ActivationKind::Relu => elementwise(&|a| maximum(a, 0.0)),
            ActivationKind::Gelu => match ctx.string("approximate")?.as_str() {
                "none" => elementwise(&|a| 0.5 * a * (1.0 + erf(a * FRAC_1_SQRT_2))),
                "tanh" => {
                    let c = (2.0 / PI).sqrt();
                    elementwise(&|a| 0.5 * a * (1.0 + (c * (a + 0.044715 * a * a * a)).tanh()))
                }
                other => Err(unverified(format!("approximate = \"{other}\""))),
            },
            ActivationKind::Sigmoid => elementwise(&sigmoid),
            ActivationKind::Silu => elementwise(&|a| a * sigmoid(a)),
            ActivationKind::Softmax | ActivationKind::LogSoftmax => {
                let split = AxisSplit::at_axis(&ty.shape, ctx.axis("axis", ty.rank())?);
                let mut y = vec![0.0; x.len()];
                for o in 0..split.outer {
                    for n in 0..split.inner {
                        let at = |i| split.position(o, i, n);
                        let m = (0..split.len).fold(f64::NEG_INFINITY, |m, i| maximum(m, x[at(i)]));
                        let sum: f64 = (0..split.len).map(|i| (x[at(i)] - m).exp()).sum();
                        for i in 0..split.len {
                            y[at(i)] = if self.kind == ActivationKind::Softmax {
                                (x[at(i)] - m).exp() / sum
                            } else {
                                x[at(i)] - m - sum.ln()
                            };
                        }
                    }
                }
                one(ty, y)
            }
        }
    }
}

impl Evaluate for LayerNorm {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let (x, gamma, beta) = (ctx.floats(0)?, ctx.floats(1)?, ctx.floats(2)?);
        let ty = ctx.result_type(0)?;
        let epsilon = ctx.float("epsilon")?;
        let split = AxisSplit::trailing(&ty.shape, ctx.axis("axis", ty.rank())?);
        if gamma.len() != split.len || beta.len() != split.len {
            return Err(unverified(
                "gamma or beta does not match the normalized axes",
            ));
        }
        let len = split.len as f64;
        let mut y = Vec::with_capacity(x.len());
        for o in 0..split.outer {
            let group = &x[split.position(o, 0, 0)..][..split.len];
            let mean = group.iter().sum::<f64>() / len;
            // Centered before squaring: no cancellation when the mean is large.
            let variance = group.iter().map(|&a| (a - mean) * (a - mean)).sum::<f64>() / len;
            let scale = (variance + epsilon).sqrt();
            for (i, &a) in group.iter().enumerate() {
                y.push((a - mean) / scale * gamma[i] + beta[i]);
            }
        }
        one(ty, y)
    }
}

impl Evaluate for BatchNorm {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let x = ctx.floats(0)?;
        let [scale, offset, mean, variance] = [
            ctx.floats(1)?,
            ctx.floats(2)?,
            ctx.floats(3)?,
            ctx.floats(4)?,
        ];
        let ty = ctx.result_type(0)?;
        let epsilon = ctx.float("epsilon")?;
        let channels = ty.shape.last().map_or(0, |&c| c as usize);
        if [scale, offset, mean, variance]
            .iter()
            .any(|p| p.len() != channels)
        {
            return Err(unverified("a parameter does not match the channels"));
        }
        let y = x
            .iter()
            .enumerate()
            .map(|(p, &a)| {
                let c = p % channels;
                (a - mean[c]) / (variance[c] + epsilon).sqrt() * scale[c] + offset[c]
            })
            .collect();
        one(ty, y)
    }
}

/// The input row or column that window offset `tap` of output position `out` reads: `out *
/// stride + tap * dilation - pad_before`, or `None` in the padding.
fn source(
    out: usize,
    stride: u64,
    tap: usize,
    dilation: u64,
    pad_before: u64,
    size: u64,
) -> Option<usize> {
    let at = out as i128 * i128::from(stride) + tap as i128 * i128::from(dilation)
        - i128::from(pad_before);
    (0..i128::from(size)).contains(&at).then_some(at as usize)
}

/// A 2-d window slid over the spatial dimensions of an NHWC input, what convolution and
/// pooling share: the padding and output size (resolved by the rule the shape inference
/// uses), the input positions each window reads, and the NHWC result.
struct Sliding {
    /// Input batch, height, width and channels.
    input: [usize; 4],
    /// Output height and width.
    output: [usize; 2],
    /// Window height and width.
    window: [usize; 2],
    strides: [u64; 2],
    dilations: [u64; 2],
    /// Padding before the first row and before the first column.
    top: u64,
    left: u64,
}

impl Sliding {
    /// A `window` with `strides` and `dilations` over NHWC input `x`, padded as the op's
    /// `padding` attribute says.
    fn new(
        ctx: &EvalContext<'_>,
        x: &TensorType,
        window: [u64; 2],
        strides: [u64; 2],
        dilations: [u64; 2],
    ) -> Result<Sliding, EvalError> {
        let &[n, h, w, c] = x.shape.as_slice() else {
            return Err(unverified(format!("{x} is not an NHWC input")));
        };
        let padding = ctx
            .attr("padding")
            .unwrap_or(Attribute::Str("valid".into()));
        let g =
            window_geometry(&padding, [h, w], window, strides, dilations).map_err(|e| match e {
                WindowError::Padding(m) | WindowError::TooLarge(m) => unverified(m),
            })?;
        let u = |d: u64| d as usize;
        Ok(Sliding {
            input: [n, h, w, c].map(u),
            output: g.output.map(u),
            window: window.map(u),
            strides,
            dilations,
            top: g.padding[0],
            left: g.padding[2],
        })
    }

    /// Calls `visit(p, q, at)` for each tap `(p, q)` of the window at output position `(n, i,
    /// j)` that lies inside the input (padding takes no part), in row-major order of the
    /// taps; `at` is the row-major position of the input element at channel 0.
    fn taps(&self, [n, i, j]: [usize; 3], mut visit: impl FnMut(usize, usize, usize)) {
        let [_, h, w, c] = self.input;
        for p in 0..self.window[0] {
            let Some(row) = source(i, self.strides[0], p, self.dilations[0], self.top, h as u64)
            else {
                continue;
            };
            for q in 0..self.window[1] {
                let Some(col) = source(
                    j,
                    self.strides[1],
                    q,
                    self.dilations[1],
                    self.left,
                    w as u64,
                ) else {
                    continue;
                };
                visit(p, q, ((n * h + row) * w + col) * c);
            }
        }
    }

    /// The result of type `ty`, NHWC with the output's height and width and `channels`
    /// channels (else an error naming the op's `what`): `value([n, i, j, channel])` for each
    /// element, in row-major order.
    fn outputs(
        &self,
        ty: &TensorType,
        channels: usize,
        what: &str,
        mut value: impl FnMut([usize; 4]) -> f64,
    ) -> Result<Vec<Tensor>, EvalError> {
        let [nb, ..] = self.input;
        let [oh, ow] = self.output;
        if ty.shape != [nb, oh, ow, channels].map(|d| d as u64) {
            return Err(unverified(format!("{ty} is not the {what}'s shape")));
        }
        let mut y = Vec::with_capacity(nb * oh * ow * channels);
        for n in 0..nb {
            for i in 0..oh {
                for j in 0..ow {
                    for channel in 0..channels {
                        y.push(value([n, i, j, channel]));
                    }
                }
            }
        }
        one(ty, y)
    }
}

impl Evaluate for Conv2d {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let (x, w) = (ctx.floats(0)?, ctx.floats(1)?);
        let bias = ctx.optional_floats(2)?;
        let (xt, wt) = (&ctx.operand(0)?.ty, &ctx.operand(1)?.ty);
        let ty = ctx.result_type(0)?;
        let &[kh, kw, _, f] = wt.shape.as_slice() else {
            return Err(unverified(format!("{wt} is not an HWCF filter")));
        };
        let strides = pair(ctx, "strides", [1, 1])?;
        let dilations = pair(ctx, "dilations", [1, 1])?;
        let sliding = Sliding::new(ctx, xt, [kh, kw], strides, dilations)?;
        let (c, kw, f) = (sliding.input[3], kw as usize, f as usize);
        sliding.outputs(ty, f, "convolution", |[n, i, j, ff]| {
            let mut sum = 0.0;
            sliding.taps([n, i, j], |p, q, at| {
                for cc in 0..c {
                    sum += x[at + cc] * w[((p * kw + q) * c + cc) * f + ff];
                }
            });
            sum + bias.map_or(0.0, |b| b[ff])
        })
    }
}

impl Evaluate for GroupConv2d {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let (x, w) = (ctx.floats(0)?, ctx.floats(1)?);
        let bias = ctx.optional_floats(2)?;
        let (xt, wt) = (&ctx.operand(0)?.ty, &ctx.operand(1)?.ty);
        let ty = ctx.result_type(0)?;
        let &[kh, kw, cg, f] = wt.shape.as_slice() else {
            return Err(unverified(format!("{wt} is not an HWCF filter")));
        };
        let groups = ctx.int("groups")?;
        if groups < 1 || f % groups as u64 != 0 {
            return Err(unverified(format!("{groups} groups for {f} filters")));
        }
        let strides = pair(ctx, "strides", [1, 1])?;
        let dilations = pair(ctx, "dilations", [1, 1])?;
        let sliding = Sliding::new(ctx, xt, [kh, kw], strides, dilations)?;
        let (kw, cg, f) = (kw as usize, cg as usize, f as usize);
        let per_group = f / groups as usize;
        sliding.outputs(ty, f, "convolution", |[n, i, j, ff]| {
            let first = ff / per_group * cg;
            let mut sum = 0.0;
            sliding.taps([n, i, j], |p, q, at| {
                for c in 0..cg {
                    sum += x[at + first + c] * w[((p * kw + q) * cg + c) * f + ff];
                }
            });
            sum + bias.map_or(0.0, |b| b[ff])
        })
    }
}

impl Evaluate for Pool {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let x = ctx.floats(0)?;
        let xt = &ctx.operand(0)?.ty;
        let ty = ctx.result_type(0)?;
        let window = match ctx.int_list("window")?.as_slice() {
            &[a, b] if a > 0 && b > 0 => [a as u64, b as u64],
            _ => return Err(unverified("'window' is not two positive integers")),
        };
        let strides = pair(ctx, "strides", window)?;
        let dilations = pair(ctx, "dilations", [1, 1])?;
        let sliding = Sliding::new(ctx, xt, window, strides, dilations)?;
        let c = sliding.input[3];
        sliding.outputs(ty, c, "pooling", |[n, i, j, cc]| {
            // The window positions inside the input; padding takes no part.
            let mut inside = Vec::new();
            sliding.taps([n, i, j], |_, _, at| inside.push(x[at + cc]));
            match self.kind {
                PoolKind::Max => inside.iter().fold(f64::NEG_INFINITY, |m, &a| maximum(m, a)),
                PoolKind::Avg => inside.iter().sum::<f64>() / inside.len() as f64,
            }
        })
    }
}

impl Evaluate for Attention {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let (q, k, v) = (ctx.floats(0)?, ctx.floats(1)?, ctx.floats(2)?);
        let (qt, kt, vt) = (
            &ctx.operand(0)?.ty,
            &ctx.operand(1)?.ty,
            &ctx.operand(2)?.ty,
        );
        let ty = ctx.result_type(0)?;
        let (r, u) = (qt.rank(), |d: u64| d as usize);
        if r < 2 || kt.rank() != r || vt.rank() != r {
            return Err(unverified("operands of different ranks, or below 2"));
        }
        let (lq, d) = (u(qt.shape[r - 2]), u(qt.shape[r - 1]));
        let (lk, dv) = (u(kt.shape[r - 2]), u(vt.shape[r - 1]));
        let batch = element_count(&qt.shape[..r - 2]);
        let scale = match ctx.attr("scale") {
            Some(_) => ctx.float("scale")?,
            None => 1.0 / (d as f64).sqrt(),
        };
        let causal = ctx.boolean("causal")?;
        let mut y = Vec::with_capacity(batch * lq * dv);
        for b in 0..batch {
            let (q, k, v) = (&q[b * lq * d..], &k[b * lk * d..], &v[b * lk * dv..]);
            for i in 0..lq {
                // Query i sees keys 0..=i when causal (top-left aligned), else all of them.
                let keys = if causal { lk.min(i + 1) } else { lk };
                let scores: Vec<f64> = (0..keys)
                    .map(|j| (0..d).map(|e| q[i * d + e] * k[j * d + e]).sum::<f64>() * scale)
                    .collect();
                let m = scores.iter().fold(f64::NEG_INFINITY, |m, &s| maximum(m, s));
                let exps: Vec<f64> = scores.iter().map(|&s| (s - m).exp()).collect();
                let sum: f64 = exps.iter().sum();
                for e in 0..dv {
                    y.push((0..keys).map(|j| exps[j] / sum * v[j * dv + e]).sum());
                }
            }
        }
        one(ty, y)
    }
}

#[cfg(test)]
mod tests {
    use std::f64::consts::LN_2;
    use tessera::dialect::Registry;
    use tessera::exec::tensor::Tensor;
    use tessera::exec::testing::{self, assert_close, assert_floats, floats};

    const NAN: f64 = f64::NAN;
    const INF: f64 = f64::INFINITY;

    /// `%y = <op> : <result>`, an `nn` op, on inputs bound to `%a`, `%b`, ... in order.
    #[track_caller]
    fn eval(op: &str, result: &str, inputs: &[Tensor]) -> Tensor {
        testing::eval(&Registry::new().with(&crate::NN), op, result, inputs)
    }

    /// The 3x3 image 1..9 as a [1, 3, 3, 1] NHWC tensor.
    fn one_to_nine() -> Tensor {
        floats(
            "1x3x3x1xf32",
            &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
        )
    }

    #[test]
    fn dense() {
        // [[1, 2], [3, 4]] · [[1, 0, -1], [2, 1, 0]] = [[5, 2, -1], [11, 4, -3]], plus the bias.
        let x = || floats("2x2xf32", &[1.0, 2.0, 3.0, 4.0]);
        let w = || floats("2x3xf32", &[1.0, 0.0, -1.0, 2.0, 1.0, 0.0]);
        let b = floats("3xf32", &[0.5, -1.0, 2.0]);
        assert_floats(
            &eval("nn.dense %a, %b, %c", "2x3xf32", &[x(), w(), b]),
            "2x3xf32",
            &[5.5, 1.0, 1.0, 11.5, 3.0, -1.0],
        );
        assert_floats(
            &eval("nn.dense %a, %b", "2x3xf32", &[x(), w()]),
            "2x3xf32",
            &[5.0, 2.0, -1.0, 11.0, 4.0, -3.0],
        );
        // Leading dimensions of x are batch dimensions.
        let x = floats("2x1x2xf32", &[1.0, 2.0, 3.0, 4.0]);
        assert_floats(
            &eval("nn.dense %a, %b", "2x1x3xf32", &[x, w()]),
            "2x1x3xf32",
            &[5.0, 2.0, -1.0, 11.0, 4.0, -3.0],
        );
    }

    #[test]
    fn relu() {
        let x = floats("6xf32", &[-1.0, 0.0, 2.0, NAN, -0.0, -INF]);
        assert_floats(
            &eval("nn.relu %a", "6xf32", &[x]),
            "6xf32",
            &[0.0, 0.0, 2.0, NAN, 0.0, 0.0],
        );
    }

    #[test]
    fn gelu_exact_and_tanh() {
        // From mpmath at 50 digits.
        let x = || floats("4xf64", &[0.0, 1.0, -1.0, 3.0]);
        let exact = [
            0.0,
            0.8413447460685429,
            -0.15865525393145705,
            2.99595030590511,
        ];
        assert_close(&eval("nn.gelu %a", "4xf64", &[x()]), "4xf64", &exact);
        assert_close(
            &eval("nn.gelu %a {approximate = \"none\"}", "4xf64", &[x()]),
            "4xf64",
            &exact,
        );
        assert_close(
            &eval("nn.gelu %a {approximate = \"tanh\"}", "4xf64", &[x()]),
            "4xf64",
            &[
                0.0,
                0.8411919906082767,
                -0.1588080093917233,
                2.996362607918227,
            ],
        );
    }

    #[test]
    fn sigmoid_and_silu() {
        let x = floats("6xf64", &[0.0, 1.0, -1.0, 1000.0, -1000.0, NAN]);
        assert_close(
            &eval("nn.sigmoid %a", "6xf64", &[x]),
            "6xf64",
            &[0.5, 0.7310585786300049, 0.2689414213699951, 1.0, 0.0, NAN],
        );
        let x = floats("5xf64", &[0.0, 1.0, 2.0, -1000.0, 1000.0]);
        assert_close(
            &eval("nn.silu %a", "5xf64", &[x]),
            "5xf64",
            &[0.0, 0.7310585786300049, 1.7615941559557649, 0.0, 1000.0],
        );
    }

    #[test]
    fn softmax() {
        // Row 1 would overflow e^x without subtracting the maximum.
        let x = floats("2x3xf64", &[1.0, 2.0, 3.0, 1000.0, 1000.0, 1000.0]);
        let third = 1.0 / 3.0;
        assert_close(
            &eval("nn.softmax %a", "2x3xf64", &[x]),
            "2x3xf64",
            &[
                0.09003057317038046,
                0.24472847105479764,
                0.6652409557748219,
                third,
                third,
                third,
            ],
        );
        // Along axis 0: columns [1, 2, 3] and [0, 0, 0].
        let x = floats("3x2xf64", &[1.0, 0.0, 2.0, 0.0, 3.0, 0.0]);
        assert_close(
            &eval("nn.softmax %a {axis = 0}", "3x2xf64", &[x]),
            "3x2xf64",
            &[
                0.09003057317038046,
                third,
                0.24472847105479764,
                third,
                0.6652409557748219,
                third,
            ],
        );
        let x = floats("2xf32", &[-INF, 0.0]);
        assert_floats(&eval("nn.softmax %a", "2xf32", &[x]), "2xf32", &[0.0, 1.0]);
    }

    #[test]
    fn log_softmax() {
        let x = floats("3xf64", &[1.0, 2.0, 3.0]);
        assert_close(
            &eval("nn.log_softmax %a", "3xf64", &[x]),
            "3xf64",
            &[-2.40760596444438, -1.4076059644443804, -0.4076059644443803],
        );
        // Stable for large inputs: e^1000 is never formed.
        let x = floats("2x2xf64", &[0.0, 1000.0, 0.0, 0.0]);
        assert_close(
            &eval("nn.log_softmax %a {axis = -1}", "2x2xf64", &[x]),
            "2x2xf64",
            &[-1000.0, 0.0, -LN_2, -LN_2],
        );
    }

    #[test]
    fn layer_norm_centers_before_the_variance() {
        // [1, 2, 3, 4]: mean 2.5, variance 1.25; the second row is the first plus 1e8, where
        // E[x^2] - E[x]^2 would lose every digit, and gives the same result.
        let x = floats(
            "2x4xf64",
            &[
                1.0,
                2.0,
                3.0,
                4.0,
                1e8 + 1.0,
                1e8 + 2.0,
                1e8 + 3.0,
                1e8 + 4.0,
            ],
        );
        let gamma = floats("4xf64", &[1.0, 2.0, 1.0, 2.0]);
        let beta = floats("4xf64", &[0.0, 0.0, 1.0, 1.0]);
        let row = [
            -1.3416407864998738,
            -0.8944271909999159,
            1.4472135954999579,
            3.6832815729997477,
        ];
        assert_close(
            &eval(
                "nn.layer_norm %a, %b, %c {epsilon = 0.0}",
                "2x4xf64",
                &[x, gamma, beta],
            ),
            "2x4xf64",
            &[row, row].concat(),
        );
        // The default epsilon (1e-5): [0, 2] has variance 1.
        let (x, g, b) = (
            floats("2xf64", &[0.0, 2.0]),
            floats("2xf64", &[1.0, 1.0]),
            floats("2xf64", &[0.0, 0.0]),
        );
        assert_close(
            &eval("nn.layer_norm %a, %b, %c", "2xf64", &[x, g, b]),
            "2xf64",
            &[-0.9999950000374996, 0.9999950000374996],
        );
        // Over the last two axes (axis 1 of 3, also written -2).
        for axis in ["1", "-2"] {
            let x = floats("1x2x2xf64", &[1.0, 2.0, 3.0, 4.0]);
            let (g, b) = (floats("2x2xf64", &[1.0; 4]), floats("2x2xf64", &[0.0; 4]));
            let op = format!("nn.layer_norm %a, %b, %c {{axis = {axis}, epsilon = 0.0}}");
            assert_close(
                &eval(&op, "1x2x2xf64", &[x, g, b]),
                "1x2x2xf64",
                &[
                    -1.3416407864998738,
                    -0.4472135954999579,
                    0.4472135954999579,
                    1.3416407864998738,
                ],
            );
        }
    }

    #[test]
    fn batch_norm() {
        // Channel 0: (x - 1) / 2 * 2; channel 1: (x - 2) / 0.5 + 1.
        let x = floats("2x2xf32", &[1.0, 2.0, 3.0, 4.0]);
        let params = [
            floats("2xf32", &[2.0, 1.0]),
            floats("2xf32", &[0.0, 1.0]),
            floats("2xf32", &[1.0, 2.0]),
            floats("2xf32", &[4.0, 0.25]),
        ];
        let inputs: Vec<Tensor> = std::iter::once(x).chain(params).collect();
        assert_floats(
            &eval(
                "nn.batch_norm %a, %b, %c, %d, %e {epsilon = 0.0}",
                "2x2xf32",
                &inputs,
            ),
            "2x2xf32",
            &[0.0, 1.0, 2.0, 5.0],
        );
        // The default epsilon (1e-3): 2 / sqrt(1.001).
        let inputs = [3.0, 1.0, 0.0, 1.0, 1.0].map(|v| floats("1xf64", &[v]));
        assert_close(
            &eval("nn.batch_norm %a, %b, %c, %d, %e", "1xf64", &inputs),
            "1xf64",
            &[1.9990007493755464],
        );
    }

    #[test]
    fn conv2d_valid_same_strides_dilations() {
        let ones = || floats("2x2x1x1xf32", &[1.0; 4]);
        // Each output sums a 2x2 block of 1..9.
        assert_floats(
            &eval("nn.conv2d %a, %b", "1x2x2x1xf32", &[one_to_nine(), ones()]),
            "1x2x2x1xf32",
            &[12.0, 16.0, 24.0, 28.0],
        );
        // "same", stride 1: TensorFlow pads 0 before and 1 after.
        assert_floats(
            &eval(
                "nn.conv2d %a, %b {padding = \"same\"}",
                "1x3x3x1xf32",
                &[one_to_nine(), ones()],
            ),
            "1x3x3x1xf32",
            &[12.0, 16.0, 9.0, 24.0, 28.0, 15.0, 15.0, 17.0, 9.0],
        );
        assert_floats(
            &eval(
                "nn.conv2d %a, %b {strides = [2, 2]}",
                "1x1x1x1xf32",
                &[one_to_nine(), ones()],
            ),
            "1x1x1x1xf32",
            &[12.0],
        );
        // Dilation 2: the taps are the four corners, 1 + 3 + 7 + 9.
        assert_floats(
            &eval(
                "nn.conv2d %a, %b {dilations = [2, 2]}",
                "1x1x1x1xf32",
                &[one_to_nine(), ones()],
            ),
            "1x1x1x1xf32",
            &[20.0],
        );
        // [top, bottom, left, right] = [1, 0, 0, 1].
        assert_floats(
            &eval(
                "nn.conv2d %a, %b {padding = [1, 0, 0, 1]}",
                "1x3x3x1xf32",
                &[one_to_nine(), ones()],
            ),
            "1x3x3x1xf32",
            &[3.0, 5.0, 3.0, 12.0, 16.0, 9.0, 24.0, 28.0, 15.0],
        );
        // "same", stride 2 on 5x5 ones with a 3x3 window: pads 1 on each side, so each output
        // counts the window positions inside the input.
        let x = floats("1x5x5x1xf32", &[1.0; 25]);
        let w = floats("3x3x1x1xf32", &[1.0; 9]);
        assert_floats(
            &eval(
                "nn.conv2d %a, %b {padding = \"same\", strides = [2, 2]}",
                "1x3x3x1xf32",
                &[x, w],
            ),
            "1x3x3x1xf32",
            &[4.0, 6.0, 4.0, 6.0, 9.0, 6.0, 4.0, 6.0, 4.0],
        );
    }

    #[test]
    fn group_conv2d_keeps_each_group_to_its_channels() {
        // Depthwise (2 groups of 1 channel, 2 filters each) over a 1x1 image [3, 5]: filters
        // 0 and 1 see channel 0 only, filters 2 and 3 channel 1 only.
        let x = floats("1x1x1x2xf64", &[3.0, 5.0]);
        let w = floats("1x1x1x4xf64", &[1.0, 2.0, 10.0, 100.0]);
        let b = floats("4xf64", &[0.5, 0.0, 0.0, -1.0]);
        assert_floats(
            &eval(
                "nn.group_conv2d %a, %b, %c {groups = 2}",
                "1x1x1x4xf64",
                &[x, w, b],
            ),
            "1x1x1x4xf64",
            &[3.5, 6.0, 50.0, 499.0],
        );
        // Two groups of 2 channels: [1, 2 | 3, 4] with per-group filters summing the group.
        let x = floats("1x1x1x4xf64", &[1.0, 2.0, 3.0, 4.0]);
        let w = floats("1x1x2x2xf64", &[1.0, 1.0, 1.0, 1.0]);
        assert_floats(
            &eval(
                "nn.group_conv2d %a, %b {groups = 2}",
                "1x1x1x2xf64",
                &[x, w],
            ),
            "1x1x1x2xf64",
            &[3.0, 7.0],
        );
        // One group is nn.conv2d, window and padding included (as conv2d's own test).
        let ones = floats("2x2x1x1xf32", &[1.0; 4]);
        assert_floats(
            &eval(
                "nn.group_conv2d %a, %b {groups = 1, padding = \"same\"}",
                "1x3x3x1xf32",
                &[one_to_nine(), ones],
            ),
            "1x3x3x1xf32",
            &[12.0, 16.0, 9.0, 24.0, 28.0, 15.0, 15.0, 17.0, 9.0],
        );
    }

    #[test]
    fn conv2d_channels_filters_batch_and_bias() {
        // y[f] = sum_c x[c] * w[c, f] + b[f]: w = [[1, 2], [3, 4]].
        let x = floats("2x1x1x2xf64", &[1.0, 2.0, -1.0, 0.0]);
        let w = floats("1x1x2x2xf64", &[1.0, 2.0, 3.0, 4.0]);
        let b = floats("2xf64", &[0.5, -1.0]);
        assert_floats(
            &eval("nn.conv2d %a, %b, %c", "2x1x1x2xf64", &[x, w, b]),
            "2x1x1x2xf64",
            &[7.5, 9.0, -0.5, -3.0],
        );
    }

    #[test]
    fn max_pool2d_ignores_padding() {
        let x = floats("1x4x4x1xf32", &(1..=16).map(f64::from).collect::<Vec<_>>());
        assert_floats(
            &eval("nn.max_pool2d %a {window = [2, 2]}", "1x2x2x1xf32", &[x]),
            "1x2x2x1xf32",
            &[6.0, 8.0, 14.0, 16.0],
        );
        // All negative: a zero padding must never win.
        let x = floats(
            "1x3x3x1xf32",
            &[-1.0, -2.0, -3.0, -4.0, -5.0, -6.0, -7.0, -8.0, -9.0],
        );
        assert_floats(
            &eval(
                "nn.max_pool2d %a {padding = \"same\", strides = [1, 1], window = [2, 2]}",
                "1x3x3x1xf32",
                &[x],
            ),
            "1x3x3x1xf32",
            &[-1.0, -2.0, -3.0, -4.0, -5.0, -6.0, -7.0, -8.0, -9.0],
        );
        // [top, bottom, left, right] = [1, 0, 1, 0], stride 2.
        assert_floats(
            &eval(
                "nn.max_pool2d %a {padding = [1, 0, 1, 0], window = [2, 2]}",
                "1x2x2x1xf32",
                &[one_to_nine()],
            ),
            "1x2x2x1xf32",
            &[1.0, 3.0, 7.0, 9.0],
        );
        // Per channel; NaN propagates.
        let x = floats("1x2x2x2xf32", &[1.0, -1.0, 2.0, -2.0, 3.0, NAN, 4.0, -4.0]);
        assert_floats(
            &eval("nn.max_pool2d %a {window = [2, 2]}", "1x1x1x2xf32", &[x]),
            "1x1x1x2xf32",
            &[4.0, NAN],
        );
    }

    #[test]
    fn avg_pool2d_excludes_padding_from_the_count() {
        assert_floats(
            &eval(
                "nn.avg_pool2d %a {padding = \"same\", strides = [1, 1], window = [2, 2]}",
                "1x3x3x1xf32",
                &[one_to_nine()],
            ),
            "1x3x3x1xf32",
            &[3.0, 4.0, 4.5, 6.0, 7.0, 7.5, 7.5, 8.5, 9.0],
        );
        assert_floats(
            &eval(
                "nn.avg_pool2d %a {padding = [1, 0, 1, 0], window = [2, 2]}",
                "1x2x2x1xf32",
                &[one_to_nine()],
            ),
            "1x2x2x1xf32",
            &[1.0, 2.5, 5.5, 7.0],
        );
        // 4/3 rounded to f32.
        let x = floats("1x1x3x1xf32", &[1.0, 1.0, 2.0]);
        assert_floats(
            &eval("nn.avg_pool2d %a {window = [1, 3]}", "1x1x1x1xf32", &[x]),
            "1x1x1x1xf32",
            &[1.3333333730697632],
        );
    }

    #[test]
    fn dilated_pools_read_every_other_position() {
        // 1..=9 in 3 x 3: a 2 x 2 window with dilations 2 reads the four corners.
        assert_floats(
            &eval(
                "nn.max_pool2d %a {dilations = [2, 2], window = [2, 2]}",
                "1x1x1x1xf32",
                &[one_to_nine()],
            ),
            "1x1x1x1xf32",
            &[9.0],
        );
        assert_floats(
            &eval(
                "nn.avg_pool2d %a {dilations = [2, 2], window = [2, 2]}",
                "1x1x1x1xf32",
                &[one_to_nine()],
            ),
            "1x1x1x1xf32",
            &[5.0],
        );
        // Padded by one on top and left, stride 1, dilations [2, 1]: the window at (0, 0)
        // reads rows -1 and 1, columns -1 and 0, so only x[1][0] = 4 is inside; the windows
        // of the second output row read rows 0 and 2 (1 and 7 at column 0).
        assert_floats(
            &eval(
                "nn.avg_pool2d %a {dilations = [2, 1], padding = [1, 0, 1, 0], strides = [1, 1], window = [2, 2]}",
                "1x2x3x1xf32",
                &[one_to_nine()],
            ),
            "1x2x3x1xf32",
            &[4.0, 4.5, 5.5, 4.0, 4.5, 5.5],
        );
    }

    #[test]
    fn attention_default_scale_and_value_width() {
        // D = 4, so the scale is 1/2: raw scores [0, 1] become [0, 0.5], p = [1 - s, s] with
        // s = sigmoid(0.5); v = [[0, 10], [1, 20]].
        let q = floats("1x4xf64", &[1.0, 1.0, 1.0, 1.0]);
        let k = floats("2x4xf64", &[0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]);
        let v = floats("2x2xf64", &[0.0, 10.0, 1.0, 20.0]);
        assert_close(
            &eval("nn.attention %a, %b, %c", "1x2xf64", &[q, k, v]),
            "1x2xf64",
            &[0.6224593312018546, 16.224593312018545],
        );
    }

    #[test]
    fn attention_explicit_scale_and_batches() {
        // Batch 0: equal scores, the mean of [1, 3]. Batch 1: scores [0, scale], weights
        // sigmoid(scale) on the value 1.
        let q = || floats("2x1x1xf64", &[1.0, 1.0]);
        let k = || floats("2x2x1xf64", &[0.0, 0.0, 0.0, 1.0]);
        let v = || floats("2x2x1xf64", &[1.0, 3.0, 0.0, 1.0]);
        assert_close(
            &eval(
                "nn.attention %a, %b, %c {scale = 1.0}",
                "2x1x1xf64",
                &[q(), k(), v()],
            ),
            "2x1x1xf64",
            &[2.0, 0.7310585786300049],
        );
        assert_close(
            &eval(
                "nn.attention %a, %b, %c {scale = 2.0}",
                "2x1x1xf64",
                &[q(), k(), v()],
            ),
            "2x1x1xf64",
            &[2.0, 0.8807970779778824],
        );
    }

    #[test]
    fn attention_causal_mask_is_top_left() {
        // Zero scores: each query averages the values of the keys it sees.
        let k = || floats("3x1xf64", &[0.0, 0.0, 0.0]);
        let v = || floats("3x1xf64", &[3.0, 6.0, 9.0]);
        let q3 = || floats("3x1xf64", &[1.0, 1.0, 1.0]);
        assert_close(
            &eval(
                "nn.attention %a, %b, %c {causal = true}",
                "3x1xf64",
                &[q3(), k(), v()],
            ),
            "3x1xf64",
            &[3.0, 4.5, 6.0],
        );
        assert_close(
            &eval(
                "nn.attention %a, %b, %c {causal = false}",
                "3x1xf64",
                &[q3(), k(), v()],
            ),
            "3x1xf64",
            &[6.0, 6.0, 6.0],
        );
        // Two queries over three keys: query i sees keys 0..=i.
        let q2 = floats("2x1xf64", &[1.0, 1.0]);
        assert_close(
            &eval(
                "nn.attention %a, %b, %c {causal = true}",
                "2x1xf64",
                &[q2, k(), v()],
            ),
            "2x1xf64",
            &[3.0, 4.5],
        );
    }
}
