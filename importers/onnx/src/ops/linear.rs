//! Matrix products: `MatMul` (numpy semantics, 1-d operands promoted), `Gemm`
//! (`alpha · A' · B' + beta · C`) and the two-operand `Einsum` forms that are batched matrix
//! products, each an `array.matmul` between transposes and reshapes.

use super::{input, Inputs};
use crate::graph::{invalid, unsupported, Graph, NodeResult, Val};
use crate::node::Node;
use tessera::exec::tensor::Tensor;
use tessera::types::{ElementType, TensorType};

/// `MatMul`.
pub fn matmul(g: &mut Graph, _: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    Ok(vec![matmul_of(g, &input(inputs, 0)?, &input(inputs, 1)?)?])
}

/// `a · b` with numpy's rules: a 1-d `a` is a row, a 1-d `b` a column, and the added
/// dimension is removed again.
pub fn matmul_of(g: &mut Graph, a: &Val, b: &Val) -> NodeResult<Val> {
    let (ta, tb) = (g.ty(a), g.ty(b));
    if ta.rank() == 0 || tb.rank() == 0 {
        return invalid("MatMul operands must have rank 1 or more");
    }
    let a2 = if ta.rank() == 1 {
        g.reshape(a, vec![1, ta.shape[0]])?
    } else {
        a.clone()
    };
    let b2 = if tb.rank() == 1 {
        g.reshape(b, vec![tb.shape[0], 1])?
    } else {
        b.clone()
    };
    let (ta2, tb2) = (g.ty(&a2), g.ty(&b2));
    let y = if ta2.rank() > 2 && tb2.rank() == 2 {
        // A stack of rows times one matrix is one matrix product: the leading dimensions
        // fold into the rows (a 2-d product is the fast path).
        let (k, n) = (ta2.shape[ta2.rank() - 1], tb2.shape[1]);
        let rows: u64 = ta2.shape[..ta2.rank() - 1].iter().product();
        let flat = g.reshape(&a2, vec![rows, k])?;
        let product = g.op("array.matmul", &[flat, b2], &[], None)?;
        let mut shape = ta2.shape[..ta2.rank() - 1].to_vec();
        shape.push(n);
        g.reshape(&product, shape)?
    } else {
        g.op("array.matmul", &[a2, b2], &[], None)?
    };
    let mut shape = g.ty(&y).shape;
    if tb.rank() == 1 {
        shape.pop();
    }
    if ta.rank() == 1 {
        // The row dimension: last once a 1-d `b`'s column is gone, else second to last.
        let row = shape.len() - if tb.rank() == 1 { 1 } else { 2 };
        shape.remove(row);
    }
    g.reshape(&y, shape)
}

/// `Gemm`: `alpha · op(A) · op(B) + beta · C`, `op` a transpose where `transA`/`transB` ask.
pub fn gemm(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let mut a = input(inputs, 0)?;
    let mut b = input(inputs, 1)?;
    if g.ty(&a).rank() != 2 || g.ty(&b).rank() != 2 {
        return invalid("Gemm operands A and B must be matrices");
    }
    if node.int("transA", 0) != 0 {
        a = g.transpose(&a, &[1, 0])?;
    }
    if node.int("transB", 0) != 0 {
        b = g.transpose(&b, &[1, 0])?;
    }
    let mut y = g.op("array.matmul", &[a, b], &[], None)?;
    let element = g.ty(&y).element;
    let alpha = node.float("alpha", 1.0);
    if alpha != 1.0 {
        let s = g.scalar(alpha, element);
        y = g.binary("array.mul", &s, &y)?;
    }
    if let Some(Some(c)) = inputs.get(2) {
        let beta = node.float("beta", 1.0);
        let c = if beta == 1.0 {
            c.clone()
        } else {
            let s = g.scalar(beta, element);
            g.binary("array.mul", &s, c)?
        };
        y = g.binary("array.add", &y, &c)?;
    }
    Ok(vec![y])
}

/// One einsum term as written: its letters, and where its ellipsis (`...`) stands among
/// them, if it has one.
struct Term {
    letters: Vec<char>,
    ellipsis: Option<usize>,
}

/// Parses one einsum term.
fn term(text: &str) -> NodeResult<Term> {
    let text: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let (before, after, ellipsis) = match text.split_once("...") {
        Some((before, after)) => (before, after, true),
        None => (text.as_str(), "", false),
    };
    let letters: Vec<char> = before.chars().chain(after.chars()).collect();
    if let Some(c) = letters.iter().find(|c| !c.is_ascii_alphabetic()) {
        return invalid(format!("the equation has '{c}', not a letter"));
    }
    Ok(Term {
        ellipsis: ellipsis.then_some(before.chars().count()),
        letters,
    })
}

impl Term {
    /// The letters with the ellipsis replaced by the last `count` of `fresh` (numpy aligns
    /// the dimensions an ellipsis stands for from the right).
    fn expanded(&self, fresh: &[char], count: usize) -> Vec<char> {
        let mut letters = self.letters.clone();
        if let Some(at) = self.ellipsis {
            let tail = &fresh[fresh.len() - count..];
            letters.splice(at..at, tail.iter().copied());
        }
        letters
    }
}

/// `x` (indexed by `letters`) with each repeated letter's diagonal taken (`ii->i`): the
/// elements off it set to zero by a select, then summed away; the remaining letters.
fn diagonals(g: &mut Graph, mut x: Val, letters: &[char]) -> NodeResult<(Val, Vec<char>)> {
    let mut letters = letters.to_vec();
    while let Some((i, j)) = (0..letters.len())
        .flat_map(|j| (0..j).map(move |i| (i, j)))
        .find(|&(i, j)| letters[i] == letters[j])
    {
        let shape = g.ty(&x).shape;
        if shape[i] != shape[j] {
            return invalid(format!(
                "index '{}' is {} and {} in one operand",
                letters[i], shape[i], shape[j]
            ));
        }
        let n = shape[i] as usize;
        let mut mask_shape = vec![1; shape.len()];
        (mask_shape[i], mask_shape[j]) = (shape[i], shape[j]);
        let mask_ty = TensorType::new(mask_shape, ElementType::I1);
        let eye = (0..n * n).map(|k| f64::from(u8::from(k / n == k % n)));
        let mask = g.constant(Tensor::from_numbers(&mask_ty, eye));
        let zero = g.scalar(0.0, g.ty(&x).element);
        let kept = g.select(&mask, &x, &zero)?;
        x = g.reduce("array.reduce_sum", &kept, &[j as i64], false)?;
        letters.remove(j);
    }
    Ok((x, letters))
}

/// Where letter `c` stands in `letters` (an error, never a panic, if it does not).
fn index_of(letters: &[char], c: char) -> NodeResult<usize> {
    match letters.iter().position(|&l| l == c) {
        Some(i) => Ok(i),
        None => invalid(format!("index '{c}' is not among {letters:?}")),
    }
}

/// `x` (indexed by `letters`) summed over the letters not in `keep`; the remaining letters.
fn sum_out(g: &mut Graph, x: Val, letters: &[char], keep: &[char]) -> NodeResult<(Val, Vec<char>)> {
    let axes: Vec<i64> = (0..letters.len())
        .filter(|&i| !keep.contains(&letters[i]))
        .map(|i| i as i64)
        .collect();
    if axes.is_empty() {
        return Ok((x, letters.to_vec()));
    }
    let y = g.reduce("array.reduce_sum", &x, &axes, false)?;
    Ok((
        y,
        letters
            .iter()
            .copied()
            .filter(|c| keep.contains(c))
            .collect(),
    ))
}

/// `x` (indexed by `letters`) transposed to the order of `order`.
fn arrange(g: &mut Graph, x: &Val, letters: &[char], order: &[char]) -> NodeResult<Val> {
    let perm: Vec<i64> = order
        .iter()
        .map(|&c| index_of(letters, c).map(|i| i as i64))
        .collect::<NodeResult<_>>()?;
    g.transpose(x, &perm)
}

/// `Einsum` with one operand (a transpose and sums) or two (a batched matrix product:
/// letters in both and the output are batch, in both only are contracted, in one and the
/// output are its free dimensions); ellipses become fresh letters, repeated letters in a
/// term take diagonals first.
pub fn einsum(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let equation: String = node
        .string("equation", "")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let (lhs, out_text) = match equation.split_once("->") {
        Some((lhs, out)) => (lhs.to_string(), Some(out.to_string())),
        None => (equation.clone(), None),
    };
    // Implicit output: the ellipsis' dimensions, then the letters written once, in
    // alphabetical order (numpy's rule).
    let mut implicit: Vec<char> = equation
        .chars()
        .filter(|c| c.is_ascii_alphabetic())
        .filter(|&c| equation.matches(c).count() == 1)
        .collect();
    implicit.sort_unstable();
    let written = lhs.split(',').map(term).collect::<NodeResult<Vec<_>>>()?;
    let mut operands: Vec<Val> = inputs.iter().flatten().cloned().collect();
    if written.len() != operands.len() {
        return invalid(format!(
            "the equation has {} operands, the node {}",
            written.len(),
            operands.len()
        ));
    }
    // How many dimensions each operand's ellipsis stands for; letters no term uses name them.
    let mut counts = Vec::new();
    for (t, v) in written.iter().zip(&operands) {
        let rank = g.ty(v).rank();
        let count = match t.ellipsis {
            Some(_) if rank >= t.letters.len() => rank - t.letters.len(),
            None if rank == t.letters.len() => 0,
            _ => {
                return invalid(format!(
                    "term '{}' does not match an operand of rank {rank}",
                    t.letters.iter().collect::<String>()
                ))
            }
        };
        counts.push(count);
    }
    let widest = counts.iter().copied().max().unwrap_or(0);
    let fresh: Vec<char> = ('A'..='Z')
        .chain('a'..='z')
        .filter(|c| !equation.contains(*c))
        .take(widest)
        .collect();
    if fresh.len() < widest {
        return unsupported(
            "an Einsum whose ellipsis stands for more dimensions than letters are left",
        );
    }
    let terms: Vec<Vec<char>> = written
        .iter()
        .zip(&counts)
        .map(|(t, &count)| t.expanded(&fresh, count))
        .collect();
    let out = match out_text {
        Some(text) => term(&text)?.expanded(&fresh, widest),
        None => fresh.iter().copied().chain(implicit).collect(),
    };
    if let Some(c) = out
        .iter()
        .enumerate()
        .find_map(|(i, c)| out[..i].contains(c).then_some(c))
    {
        return invalid(format!("output index '{c}' is written twice"));
    }
    if let Some(c) = out.iter().find(|c| !terms.iter().any(|t| t.contains(c))) {
        return invalid(format!("output index '{c}' is in no operand"));
    }
    let mut terms_taken = Vec::new();
    for (operand, letters) in operands.iter_mut().zip(&terms) {
        let (x, taken) = diagonals(g, operand.clone(), letters)?;
        *operand = x;
        terms_taken.push(taken);
    }
    let terms = terms_taken;
    // An ellipsis dimension of 1 against a longer one broadcasts (numpy's rule).
    if let [a, b] = terms.as_slice() {
        for &c in fresh.iter().filter(|c| a.contains(c) && b.contains(c)) {
            let (sa, sb) = (g.ty(&operands[0]).shape, g.ty(&operands[1]).shape);
            let (i, j) = (index_of(a, c)?, index_of(b, c)?);
            if sa[i] == 1 && sb[j] != 1 {
                let mut shape = sa.clone();
                shape[i] = sb[j];
                operands[0] = g.broadcast(&operands[0], shape)?;
            } else if sb[j] == 1 && sa[i] != 1 {
                let mut shape = sb.clone();
                shape[j] = sa[i];
                operands[1] = g.broadcast(&operands[1], shape)?;
            }
        }
    }
    match terms.as_slice() {
        [a] => {
            let (x, letters) = sum_out(g, operands[0].clone(), a, &out)?;
            Ok(vec![arrange(g, &x, &letters, &out)?])
        }
        [a, b] => {
            let both = |c: &char| a.contains(c) && b.contains(c);
            // Letters only one operand has and the output lacks are summed out first.
            let keep_a: Vec<char> = a
                .iter()
                .copied()
                .filter(|c| both(c) || out.contains(c))
                .collect();
            let keep_b: Vec<char> = b
                .iter()
                .copied()
                .filter(|c| both(c) || out.contains(c))
                .collect();
            let (xa, la) = sum_out(g, operands[0].clone(), a, &keep_a)?;
            let (xb, lb) = sum_out(g, operands[1].clone(), b, &keep_b)?;
            let batch: Vec<char> = out.iter().copied().filter(|c| both(c)).collect();
            let contracted: Vec<char> = la
                .iter()
                .copied()
                .filter(|c| both(c) && !out.contains(c))
                .collect();
            let free_a: Vec<char> = la.iter().copied().filter(|c| !both(c)).collect();
            let free_b: Vec<char> = lb.iter().copied().filter(|c| !both(c)).collect();
            let (ta, tb) = (g.ty(&xa), g.ty(&xb));
            // The extent of index `c` in an operand indexed by `of` with `shape`.
            let extent = |of: &[char], shape: &[u64], c: char| -> NodeResult<u64> {
                Ok(shape[index_of(of, c)?])
            };
            let size = |letters: &[char], of: &[char], shape: &[u64]| -> NodeResult<u64> {
                letters.iter().map(|&c| extent(of, shape, c)).product()
            };
            for &c in batch.iter().chain(&contracted) {
                let (da, db) = (extent(&la, &ta.shape, c)?, extent(&lb, &tb.shape, c)?);
                if da != db {
                    return invalid(format!(
                        "index '{c}' is {da} in one operand and {db} in the other"
                    ));
                }
            }
            let order_a: Vec<char> = [&batch[..], &free_a, &contracted].concat();
            let order_b: Vec<char> = [&batch[..], &contracted, &free_b].concat();
            let pa = arrange(g, &xa, &la, &order_a)?;
            let pb = arrange(g, &xb, &lb, &order_b)?;
            let nb = size(&batch, &la, &ta.shape)?;
            let (m, k) = (
                size(&free_a, &la, &ta.shape)?,
                size(&contracted, &la, &ta.shape)?,
            );
            let n = size(&free_b, &lb, &tb.shape)?;
            let ma = g.reshape(&pa, vec![nb, m, k])?;
            let mb = g.reshape(&pb, vec![nb, k, n])?;
            let product = g.op("array.matmul", &[ma, mb], &[], None)?;
            let mut dims: Vec<u64> = Vec::new();
            let mut letters: Vec<char> = Vec::new();
            for (group, of, shape) in [
                (&batch, &la, &ta.shape),
                (&free_a, &la, &ta.shape),
                (&free_b, &lb, &tb.shape),
            ] {
                for &c in group.iter() {
                    dims.push(extent(of, shape, c)?);
                    letters.push(c);
                }
            }
            let y = g.reshape(&product, dims)?;
            Ok(vec![arrange(g, &y, &letters, &out)?])
        }
        _ => unsupported(format!(
            "Einsum of {} operands (tessera imports one or two)",
            terms.len()
        )),
    }
}
