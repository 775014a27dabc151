//! Optional values, resolved at import time: `Optional` wraps a value (or makes an empty
//! one), `OptionalHasElement` is a constant, `OptionalGetElement` unwraps; `Identity` passes
//! a value of any kind through.

use super::{item, Items};
use crate::graph::{invalid, NodeResult};
use crate::item::Item;
use crate::node::Node;
use crate::nodes::{Failure, NodeConverter, Scope};
use tessera::exec::tensor::Tensor;
use tessera::types::{ElementType, TensorType};

/// `Identity`: the input itself, whatever its kind.
pub fn identity(
    _: &mut NodeConverter,
    _: &Node,
    inputs: &Items,
    _: &Scope,
) -> Result<Vec<Item>, Failure> {
    Ok(vec![item(inputs, 0)?])
}

/// `Optional`: the input wrapped, or an empty optional (of the `type` attribute) without one.
pub fn optional(
    _: &mut NodeConverter,
    node: &Node,
    inputs: &Items,
    _: &Scope,
) -> Result<Vec<Item>, Failure> {
    let wrapped = match inputs.first() {
        Some(Some(Item::Optional(_))) => {
            invalid("its input is an optional already; ONNX has no optional of an optional")?
        }
        Some(Some(value)) => Some(Box::new(value.clone())),
        _ if node.attr("type").is_none() => {
            invalid("it has neither an input nor a type attribute")?
        }
        _ => None,
    };
    Ok(vec![Item::Optional(wrapped)])
}

/// `OptionalHasElement`: whether the optional holds a value (a tensor or sequence input
/// always does, an absent input never), a boolean scalar.
pub fn has_element(
    c: &mut NodeConverter,
    _: &Node,
    inputs: &Items,
    _: &Scope,
) -> Result<Vec<Item>, Failure> {
    let holds = !matches!(
        inputs.first(),
        None | Some(None) | Some(Some(Item::Optional(None)))
    );
    let ty = TensorType::new(vec![], ElementType::I1);
    let value =
        c.g.constant(Tensor::from_numbers(&ty, [f64::from(u8::from(holds))]));
    Ok(vec![Item::Tensor(value)])
}

/// `OptionalGetElement`: the optional's value (a tensor or sequence input is its own).
pub fn get_element(
    _: &mut NodeConverter,
    _: &Node,
    inputs: &Items,
    _: &Scope,
) -> Result<Vec<Item>, Failure> {
    Ok(vec![contents(item(inputs, 0)?)?])
}

/// The value `value` holds: an optional's contents, or itself.
fn contents(value: Item) -> NodeResult<Item> {
    match value {
        Item::Optional(Some(inner)) => Ok(*inner),
        Item::Optional(None) => invalid("its input is an empty optional, which holds no value"),
        other => Ok(other),
    }
}
