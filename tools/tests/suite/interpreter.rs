//! The reference interpreter runs every model: each function of `testdata/models` on
//! deterministic random inputs, without error, with finite float results (except where a
//! model makes non-finite values on purpose), the same on a second run.

use crate::common::{load_text, tsr_files};
use tessera::exec::interpret::interpret;
use tessera::exec::random::random_tensor;
use tessera::exec::tensor::{Tensor, TensorData};

/// Parameters that the model uses as variances: random values in [-1, 1) would make their
/// square roots NaN, so these get the absolute value. (file, function, parameter)
const NON_NEGATIVE: &[(&str, &str, &str)] = &[
    ("conv_net.tsr", "conv_net", "bn1_var"),
    ("conv_net.tsr", "conv_net", "bn2_var"),
    ("mixed_precision.tsr", "mixed_precision", "bg"),
];

/// Results that are not finite by design. (file, function, result index)
const NON_FINITE: &[(&str, &str, usize)] = &[
    // Adds a NaN constant to the selected branch.
    ("constants.tsr", "constants", 0),
];

/// `t` with every float element made non-negative.
fn absolute(t: Tensor) -> Tensor {
    match t.data {
        TensorData::Float(v) => Tensor {
            ty: t.ty,
            data: TensorData::Float(v.into_iter().map(f64::abs).collect()),
        },
        data => Tensor { ty: t.ty, data },
    }
}

#[test]
fn every_model_runs_on_random_inputs() {
    let mut functions = 0;
    for path in tsr_files("testdata/models") {
        let file = path
            .file_name()
            .and_then(|n| n.to_str())
            .expect("a UTF-8 file name")
            .to_string();
        let bytes = std::fs::read(&path).expect("model is readable");
        let module = load_text(&file, &bytes).unwrap_or_else(|e| panic!("{file}:\n{e}"));
        for (index, func) in module.funcs.iter().enumerate() {
            let inputs: Vec<Tensor> = func
                .params
                .iter()
                .enumerate()
                .map(|(i, &param)| {
                    let info = func.value(param);
                    let t = random_tensor(&info.ty, 1000 + i as u64);
                    if NON_NEGATIVE.contains(&(
                        file.as_str(),
                        func.name.as_str(),
                        info.name.as_str(),
                    )) {
                        absolute(t)
                    } else {
                        t
                    }
                })
                .collect();
            let where_ = format!("{file} @{}", func.name);
            let results =
                interpret(&module, index, &inputs).unwrap_or_else(|e| panic!("{where_}: {e}"));
            assert_eq!(results.len(), func.result_types.len(), "{where_}");
            for (i, (result, ty)) in results.iter().zip(&func.result_types).enumerate() {
                assert_eq!(&result.ty, ty, "{where_} result #{i}");
                let TensorData::Float(values) = &result.data else {
                    continue;
                };
                let finite = values.iter().all(|v| v.is_finite());
                if NON_FINITE.contains(&(file.as_str(), func.name.as_str(), i)) {
                    assert!(
                        !finite,
                        "{where_} result #{i} is listed as non-finite, but it is finite"
                    );
                } else {
                    assert!(
                        finite,
                        "{where_} result #{i} has non-finite values: {values:?}"
                    );
                }
            }
            let again =
                interpret(&module, index, &inputs).unwrap_or_else(|e| panic!("{where_}: {e}"));
            assert_eq!(
                format!("{results:?}"),
                format!("{again:?}"),
                "{where_} is not deterministic"
            );
            functions += 1;
        }
    }
    assert!(functions >= 20, "only {functions} functions ran");
}
