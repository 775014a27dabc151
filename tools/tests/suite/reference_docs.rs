//! The language reference in `docs/ops.md` is generated from the op tables; this test fails
//! when they drift apart.

use crate::common::root;
use tessera::reference::render_reference;
use tessera_tools::registry;

#[test]
fn docs_ops_md_matches_the_op_tables() {
    let expected = render_reference(&registry());
    let path = root().join("docs/ops.md");
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        actual == expected,
        "docs/ops.md is out of date; regenerate it with\n  \
         cargo run -q --bin tessera-opt -- --print-op-reference -o docs/ops.md"
    );
}

#[test]
fn every_op_is_documented_and_has_valid_defaults() {
    let registry = registry();
    for name in registry.op_names() {
        let schema = registry.op(name).expect("registered").schema();
        assert!(
            !schema.summary.is_empty() && !schema.description.is_empty(),
            "{name} lacks docs"
        );
        for attr in schema.attrs {
            assert!(
                !attr.doc.is_empty(),
                "{name} attribute {} lacks docs",
                attr.name
            );
        }
    }
}

#[test]
fn every_op_has_exactly_one_lowering() {
    let registry = registry();
    for name in registry.op_names() {
        let op = registry.op(name).expect("registered");
        let ways =
            usize::from(op.decomposition().is_some()) + usize::from(op.converter().is_some());
        assert_eq!(
            ways, 1,
            "{name} must either decompose or convert to MLIR, not {ways} of them"
        );
    }
}
