//! `tessera-convert-to-linalg`: a verified module to MLIR `func` + `tensor` + `linalg` +
//! `arith` + `math`, every operation located at the `.tsr` op it came from, verified before it
//! is returned.

use crate::diag::Diagnostic;
use crate::ir::{Func, Module, OpKind};
use crate::mlir::bridge::context::MlirContext;
use crate::mlir::bridge::emit::{ConvertError, Emitter};
use crate::mlir::bridge::located::{located_diagnostics, op_location};
use crate::mlir::bridge::lowering::OpConversion;
use crate::source::{SourceFile, Span};
use crate::transforms::decompose::decompose;
use melior::ir::attribute::{FlatSymbolRefAttribute, StringAttribute, TypeAttribute};
use melior::ir::r#type::FunctionType;
use melior::ir::{
    Attribute, Block, BlockLike, Location, Module as MlirModule, Region, RegionLike, Type, Value,
};

/// Converts `module` (from `file`) into MLIR in `context`. Ops that are compositions are
/// decomposed first. Errors are located in `file`.
pub fn convert_module<'c>(
    context: &'c MlirContext,
    module: &Module,
    file: &SourceFile,
) -> Result<MlirModule<'c>, Vec<Diagnostic>> {
    let module =
        decompose(module).map_err(|e| vec![Diagnostic::error(Span::at(0), e.to_string())])?;
    let ctx = context.context();
    let mlir_module = MlirModule::new(Location::new(ctx, file.name(), 1, 1));
    context.take_diagnostics();
    for func in &module.funcs {
        let op = convert_func(context, &module, func, file).map_err(|e| {
            vec![Diagnostic::error(
                func.span,
                format!("internal error in conversion of '@{}': {e}", func.name),
            )]
        })?;
        mlir_module.body().append_operation(op);
    }
    // The pipeline verifies the module where the conversion is not followed by tessera's own
    // stages (`runner::run_pipeline`); debug builds always do.
    if context.verify_each() && !mlir_module.as_operation().verify() {
        let mut diagnostics = located_diagnostics(&context.take_diagnostics(), file);
        if diagnostics.is_empty() {
            diagnostics.push(Diagnostic::error(
                Span::at(0),
                "the converted MLIR module does not verify",
            ));
        }
        return Err(diagnostics);
    }
    Ok(mlir_module)
}

/// `func.func @name(...) -> (...) attributes {llvm.emit_c_interface}`.
fn convert_func<'c>(
    context: &'c MlirContext,
    module: &Module,
    func: &Func,
    file: &SourceFile,
) -> Result<melior::ir::Operation<'c>, ConvertError> {
    let ctx = context.context();
    let header = op_location(ctx, file, func.span, None);
    let types_of = |emit: &Emitter<'c, '_>,
                    tys: &mut dyn Iterator<Item = &crate::types::TensorType>|
     -> Vec<Type<'c>> { tys.map(|t| emit.tensor_type(t)).collect() };
    let block = Block::new(&[]);
    let (param_types, result_types) =
        convert_body(context, module, func, file, &block, header, &types_of)?;
    let region = Region::new();
    region.append_block(block);
    let function_type = FunctionType::new(ctx, &param_types, &result_types);
    Ok(
        melior::ir::operation::OperationBuilder::new("func.func", header)
            .add_attributes(&[
                (
                    melior::ir::Identifier::new(ctx, "sym_name"),
                    StringAttribute::new(ctx, &func.name).into(),
                ),
                (
                    melior::ir::Identifier::new(ctx, "function_type"),
                    TypeAttribute::new(function_type.into()).into(),
                ),
                (
                    melior::ir::Identifier::new(ctx, "llvm.emit_c_interface"),
                    Attribute::unit(ctx),
                ),
            ])
            .add_regions([region])
            .build()?,
    )
}

/// Fills `block` with the body of `func`; returns the parameter and result types.
fn convert_body<'c, 'a>(
    context: &'c MlirContext,
    module: &Module,
    func: &Func,
    file: &SourceFile,
    block: &'a Block<'c>,
    header: Location<'c>,
    types_of: &dyn Fn(
        &Emitter<'c, '_>,
        &mut dyn Iterator<Item = &crate::types::TensorType>,
    ) -> Vec<Type<'c>>,
) -> Result<(Vec<Type<'c>>, Vec<Type<'c>>), ConvertError> {
    let ctx = context.context();
    let emit = Emitter {
        context: ctx,
        block,
        location: header,
    };
    let param_types = types_of(&emit, &mut func.param_types());
    let result_types = types_of(&emit, &mut func.result_types.iter());
    for (&param, &ty) in func.params.iter().zip(&param_types) {
        let location = op_location(
            ctx,
            file,
            func.value(param).span,
            Some(&func.value(param).name),
        );
        block.add_argument(ty, location);
    }
    let mut values: Vec<Option<Value<'c, 'a>>> = vec![None; func.values.len()];
    for (i, &param) in func.params.iter().enumerate() {
        values[param.index()] = Some(block.argument(i)?.into());
    }
    let value = |values: &[Option<Value<'c, 'a>>],
                 id: crate::ir::ValueId|
     -> Result<Value<'c, 'a>, ConvertError> {
        values[id.index()].ok_or_else(|| {
            ConvertError(format!(
                "value '%{}' used before conversion",
                func.value(id).name
            ))
        })
    };
    for op in &func.ops {
        let name = op.results.first().map(|&r| func.value(r).name.as_str());
        let emit = Emitter {
            context: ctx,
            block,
            location: op_location(ctx, file, op.span, name),
        };
        let operands = op
            .operands
            .iter()
            .map(|&o| value(&values, o))
            .collect::<Result<Vec<_>, _>>()?;
        let results: Vec<Value<'c, 'a>> = match op.kind {
            OpKind::Dialect(def) => {
                let converter = def.converter().ok_or_else(|| {
                    ConvertError(format!(
                        "'{}' has no conversion to MLIR",
                        def.schema().full_name()
                    ))
                })?;
                converter.convert(&OpConversion {
                    emit,
                    operands,
                    operand_types: op.operands.iter().map(|&o| &func.value(o).ty).collect(),
                    result_types: op.results.iter().map(|&r| &func.value(r).ty).collect(),
                    attrs: &op.attrs,
                    literal: op.literal.as_ref(),
                    schema: def.schema(),
                })?
            }
            OpKind::Call(callee) => {
                let result_types: Vec<Type<'c>> = op
                    .results
                    .iter()
                    .map(|&r| emit.tensor_type(&func.value(r).ty))
                    .collect();
                let call = emit.append(
                    emit.builder("func.call")
                        .add_operands(&operands)
                        .add_attributes(&[emit.named(
                            "callee",
                            FlatSymbolRefAttribute::new(ctx, &module.funcs[callee].name).into(),
                        )])
                        .add_results(&result_types),
                )?;
                (0..op.results.len())
                    .map(|i| Ok(call.result(i)?.into()))
                    .collect::<Result<_, ConvertError>>()?
            }
        };
        if results.len() != op.results.len() {
            return Err(ConvertError(format!(
                "conversion produced {} results for {}",
                results.len(),
                op.results.len()
            )));
        }
        for (&id, result) in op.results.iter().zip(results) {
            values[id.index()] = Some(result);
        }
    }
    let returned = func
        .returns
        .iter()
        .map(|&r| value(&values, r))
        .collect::<Result<Vec<_>, _>>()?;
    emit.append(emit.builder("func.return").add_operands(&returned))?;
    Ok((param_types, result_types))
}
