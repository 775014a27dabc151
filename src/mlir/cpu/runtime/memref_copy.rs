//! `memrefCopy`, the strided copy compiled code calls for `memref.copy` between buffers of
//! different layouts, as MLIR's runner-utils library defines it. tessera provides it itself:
//! loading that library pulls libLLVM.so in a second time and cost 15 ms of every process's
//! first compile.

/// An unranked memref as compiled code passes it: the rank, and a pointer to the ranked
/// descriptor `{allocated, aligned, offset, sizes[rank], strides[rank]}` (64-bit words).
#[repr(C)]
pub(crate) struct UnrankedMemRef {
    rank: i64,
    descriptor: *const i64,
}

/// A ranked descriptor, read.
struct Strided {
    data: *mut u8,
    sizes: Vec<i64>,
    /// In bytes.
    strides: Vec<i64>,
}

impl Strided {
    /// # Safety
    /// `memref` points to a valid unranked memref of elements of `element_size` bytes.
    unsafe fn read(memref: *const UnrankedMemRef, element_size: i64) -> Strided {
        let rank = (*memref).rank.max(0) as usize;
        let words = (*memref).descriptor;
        let aligned = *words.add(1) as *mut u8;
        let offset = *words.add(2);
        let sizes = (0..rank).map(|i| *words.add(3 + i)).collect();
        let strides = (0..rank)
            .map(|i| *words.add(3 + rank + i) * element_size)
            .collect();
        Strided {
            data: aligned.offset((offset * element_size) as isize),
            sizes,
            strides,
        }
    }
}

/// The dimensions of a copy with the addresses they step: unit dimensions dropped (they move
/// nothing), and neighbours merged where both sides are contiguous across them, so that a
/// copy into the interior of a padded buffer moves whole rows, not single elements.
fn coalesced(src: &Strided, dst: &Strided) -> Vec<(i64, i64, i64)> {
    let mut dims: Vec<(i64, i64, i64)> = Vec::new();
    for ((&size, &from), &to) in src.sizes.iter().zip(&src.strides).zip(&dst.strides) {
        if size == 1 {
            continue;
        }
        match dims.last_mut() {
            Some(last) if last.1 == size * from && last.2 == size * to => {
                *last = (last.0 * size, from, to);
            }
            _ => dims.push((size, from, to)),
        }
    }
    dims
}

/// `void memrefCopy(int64_t elemSize, UnrankedMemRefType<char> *src, UnrankedMemRefType<char>
/// *dst)`: copies every element of `src` into `dst` (same shape), whole rows at a time where
/// the innermost (coalesced) dimension is contiguous on both sides.
pub(crate) extern "C" fn memref_copy(
    element_size: i64,
    source: *const UnrankedMemRef,
    target: *const UnrankedMemRef,
) {
    // SAFETY: compiled code passes valid descriptors of live buffers of the same shape, whose
    // elements are `element_size` bytes; every address below stays within them.
    unsafe {
        let src = Strided::read(source, element_size);
        let dst = Strided::read(target, element_size);
        if src.sizes.contains(&0) {
            return;
        }
        let mut dims = coalesced(&src, &dst);
        // The row each step copies: the innermost dimension when contiguous on both sides.
        let row_bytes = match dims.last() {
            Some(&(size, from, to)) if from == element_size && to == element_size => {
                dims.pop();
                size * element_size
            }
            _ => element_size,
        } as usize;
        let mut index = vec![0i64; dims.len()];
        let (mut read, mut write) = (0isize, 0isize);
        loop {
            std::ptr::copy(src.data.offset(read), dst.data.offset(write), row_bytes);
            // The next row: step the innermost dimension, carry outwards.
            let mut axis = dims.len();
            loop {
                if axis == 0 {
                    return;
                }
                axis -= 1;
                let (size, from, to) = dims[axis];
                index[axis] += 1;
                read += from as isize;
                write += to as isize;
                if index[axis] < size {
                    break;
                }
                index[axis] = 0;
                read -= (size * from) as isize;
                write -= (size * to) as isize;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A descriptor of `data` with `offset`, `sizes` and `strides` (in elements).
    fn descriptor(data: *mut f32, offset: i64, sizes: &[i64], strides: &[i64]) -> Vec<i64> {
        let mut words = vec![data as i64, data as i64, offset];
        words.extend_from_slice(sizes);
        words.extend_from_slice(strides);
        words
    }

    #[test]
    fn copies_strided_views_and_contiguous_rows() {
        // Source: the 2x3 block at row 1, column 1 of a 4x5 matrix; target: a transposed view
        // (strides 1, 2) of a 3x2 buffer, so no row is contiguous there.
        let mut source: Vec<f32> = (0..20).map(|i| i as f32).collect();
        let mut target = vec![0f32; 6];
        let src_words = descriptor(source.as_mut_ptr(), 6, &[2, 3], &[5, 1]);
        let dst_words = descriptor(target.as_mut_ptr(), 0, &[2, 3], &[1, 2]);
        let src = UnrankedMemRef {
            rank: 2,
            descriptor: src_words.as_ptr(),
        };
        let dst = UnrankedMemRef {
            rank: 2,
            descriptor: dst_words.as_ptr(),
        };
        memref_copy(4, &src, &dst);
        assert_eq!(target, [6.0, 11.0, 7.0, 12.0, 8.0, 13.0]);
        // Contiguous rows both ways (merged into one copy), a unit dimension, and rank 0.
        let mut rows = vec![0f32; 6];
        let rows_words = descriptor(rows.as_mut_ptr(), 0, &[2, 3], &[3, 1]);
        let rows_ref = UnrankedMemRef {
            rank: 2,
            descriptor: rows_words.as_ptr(),
        };
        memref_copy(4, &src, &rows_ref);
        assert_eq!(rows, [6.0, 7.0, 8.0, 11.0, 12.0, 13.0]);
        // The interior of a padded 4x5x1 buffer from a 2x3x1 one: rows of 3 at stride 5.
        let mut small: Vec<f32> = (1..=6).map(|i| i as f32).collect();
        let mut padded = vec![0f32; 20];
        let small_words = descriptor(small.as_mut_ptr(), 0, &[2, 3, 1], &[3, 1, 1]);
        let padded_words = descriptor(padded.as_mut_ptr(), 6, &[2, 3, 1], &[5, 1, 1]);
        memref_copy(
            4,
            &UnrankedMemRef {
                rank: 3,
                descriptor: small_words.as_ptr(),
            },
            &UnrankedMemRef {
                rank: 3,
                descriptor: padded_words.as_ptr(),
            },
        );
        assert_eq!(
            &padded[5..15],
            [0.0, 1.0, 2.0, 3.0, 0.0, 0.0, 4.0, 5.0, 6.0, 0.0]
        );
        let mut one = [0f32];
        let one_words = descriptor(one.as_mut_ptr(), 0, &[], &[]);
        let scalar_src = descriptor(source.as_mut_ptr(), 19, &[], &[]);
        memref_copy(
            4,
            &UnrankedMemRef {
                rank: 0,
                descriptor: scalar_src.as_ptr(),
            },
            &UnrankedMemRef {
                rank: 0,
                descriptor: one_words.as_ptr(),
            },
        );
        assert_eq!(one, [19.0]);
    }
}
