//! Index arithmetic of the reference semantics: multi-indices in row-major order, numpy
//! broadcasting of positions, and a shape seen around one axis.

use crate::exec::tensor::row_major_strides;

/// Number of elements of `shape` (1 for rank 0).
pub fn element_count(shape: &[u64]) -> usize {
    shape.iter().map(|&d| d as usize).product()
}

/// Calls `f` with every multi-index of `shape` in row-major order: none when a dimension is
/// 0, one (empty) for rank 0.
pub fn for_each_index(shape: &[u64], mut f: impl FnMut(&[usize])) {
    if shape.contains(&0) {
        return;
    }
    let mut index = vec![0usize; shape.len()];
    loop {
        f(&index);
        // Advance like an odometer: the last dimension fastest.
        let mut d = shape.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            index[d] += 1;
            if (index[d] as u64) < shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
}

/// The row-major position of `index` in a tensor with `strides`.
pub fn position(index: &[usize], strides: &[usize]) -> usize {
    index.iter().zip(strides).map(|(i, s)| i * s).sum()
}

/// For every element of shape `to` in row-major order, the row-major position of the element
/// of a tensor of shape `from` that numpy broadcasting reads there (`from` aligned on the
/// right; its size-1 and missing dimensions repeat). `None` when `from` does not broadcast to
/// `to`.
pub fn broadcast_positions(from: &[u64], to: &[u64]) -> Option<Vec<usize>> {
    let lead = to.len().checked_sub(from.len())?;
    let fits = from
        .iter()
        .zip(&to[lead..])
        .all(|(&f, &t)| f == t || f == 1);
    if !fits {
        return None;
    }
    let strides = row_major_strides(from);
    let mut positions = Vec::with_capacity(element_count(to));
    for_each_index(to, |index| {
        let at = from
            .iter()
            .zip(&strides)
            .enumerate()
            .map(|(d, (&dim, &stride))| {
                if dim == 1 {
                    0
                } else {
                    index[lead + d] * stride
                }
            })
            .sum();
        positions.push(at);
    });
    Some(positions)
}

/// A shape seen as `[outer, len, inner]`: the dimensions before an axis, the axis, and those
/// after it, each group flattened in row-major order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AxisSplit {
    /// Elements of the dimensions before the axis.
    pub outer: usize,
    /// Extent of the axis.
    pub len: usize,
    /// Elements of the dimensions after the axis.
    pub inner: usize,
}

impl AxisSplit {
    /// `shape` around dimension `axis` (which must be below the rank).
    pub fn at_axis(shape: &[u64], axis: usize) -> AxisSplit {
        AxisSplit {
            outer: element_count(&shape[..axis]),
            len: shape[axis] as usize,
            inner: element_count(&shape[axis + 1..]),
        }
    }

    /// `shape` with the dimensions from `axis` to the last flattened into one axis (so
    /// `inner` is 1); `axis` may equal the rank (then the axis has one element).
    pub fn trailing(shape: &[u64], axis: usize) -> AxisSplit {
        AxisSplit {
            outer: element_count(&shape[..axis]),
            len: element_count(&shape[axis..]),
            inner: 1,
        }
    }

    /// The row-major position of element `i` along the axis, in the group `outer`, `inner`.
    pub fn position(&self, outer: usize, i: usize, inner: usize) -> usize {
        (outer * self.len + i) * self.inner + inner
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_run_in_row_major_order() {
        let mut seen = Vec::new();
        for_each_index(&[2, 3], |i| seen.push(i.to_vec()));
        let expected: Vec<Vec<usize>> = vec![
            vec![0, 0],
            vec![0, 1],
            vec![0, 2],
            vec![1, 0],
            vec![1, 1],
            vec![1, 2],
        ];
        assert_eq!(seen, expected);
        let mut count = 0;
        for_each_index(&[], |i| {
            assert!(i.is_empty());
            count += 1;
        });
        assert_eq!(count, 1);
        for_each_index(&[3, 0, 2], |_| panic!("no element"));
        assert_eq!(position(&[1, 2], &[3, 1]), 5);
        assert_eq!(element_count(&[]), 1);
        assert_eq!(element_count(&[4, 0]), 0);
    }

    #[test]
    fn broadcasting_reads_like_numpy() {
        // [3] against [2, 3]: the row repeats.
        assert_eq!(
            broadcast_positions(&[3], &[2, 3]),
            Some(vec![0, 1, 2, 0, 1, 2])
        );
        // [2, 1] against [2, 3]: each row's single element repeats.
        assert_eq!(
            broadcast_positions(&[2, 1], &[2, 3]),
            Some(vec![0, 0, 0, 1, 1, 1])
        );
        // Rank 0 against anything.
        assert_eq!(broadcast_positions(&[], &[2, 2]), Some(vec![0; 4]));
        // [1, 2] against [2, 1, 2].
        assert_eq!(
            broadcast_positions(&[1, 2], &[2, 1, 2]),
            Some(vec![0, 1, 0, 1])
        );
        assert_eq!(broadcast_positions(&[3], &[2, 4]), None);
        assert_eq!(broadcast_positions(&[2, 3], &[3]), None);
    }

    #[test]
    fn axis_split_positions() {
        let split = AxisSplit::at_axis(&[2, 3, 4], 1);
        assert_eq!(
            split,
            AxisSplit {
                outer: 2,
                len: 3,
                inner: 4
            }
        );
        // Element [1, 2, 3] is at 1*12 + 2*4 + 3.
        assert_eq!(split.position(1, 2, 3), 23);
        let trailing = AxisSplit::trailing(&[2, 3, 4], 1);
        assert_eq!(
            trailing,
            AxisSplit {
                outer: 2,
                len: 12,
                inner: 1
            }
        );
        assert_eq!(trailing.position(1, 11, 0), 23);
    }
}
