//! ONNX ops that move blocks of pixels between space and channels: `SpaceToDepth` and
//! `DepthToSpace` (both modes), each a reshape, a transpose and a reshape.

use super::{input, Inputs};
use crate::graph::{invalid, Graph, NodeResult, Val};
use crate::node::Node;

/// `SpaceToDepth` and `DepthToSpace` on `[N, C, H, W]` with `blocksize`.
pub fn rearrange(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let ty = g.ty(&x);
    if ty.rank() != 4 {
        return invalid(format!("its input is {ty}, not [N, C, H, W]"));
    }
    let b = node.int("blocksize", 0);
    if b <= 0 {
        return invalid(format!("blocksize {b} is not positive"));
    }
    let b = b as u64;
    let [n, c, h, w] = [ty.shape[0], ty.shape[1], ty.shape[2], ty.shape[3]];
    let crd = node.string("mode", "DCR") == "CRD";
    let (split, perm, merged) = if node.proto.op_type == "SpaceToDepth" {
        if h % b != 0 || w % b != 0 {
            return invalid(format!("{ty} has a side not divisible by blocksize {b}"));
        }
        let perm = if crd {
            [0, 1, 3, 5, 2, 4]
        } else {
            [0, 3, 5, 1, 2, 4]
        };
        (
            vec![n, c, h / b, b, w / b, b],
            perm,
            vec![n, c * b * b, h / b, w / b],
        )
    } else {
        if c % (b * b) != 0 {
            return invalid(format!("{c} channels do not divide into blocks of {b}x{b}"));
        }
        let depth = c / (b * b);
        let (split, perm) = if crd {
            (vec![n, depth, b, b, h, w], [0, 1, 4, 2, 5, 3])
        } else {
            (vec![n, b, b, depth, h, w], [0, 3, 4, 1, 5, 2])
        };
        (split, perm, vec![n, depth, h * b, w * b])
    };
    let blocks = g.reshape(&x, split)?;
    let moved = g.transpose(&blocks, &perm)?;
    Ok(vec![g.reshape(&moved, merged)?])
}
