//! The textual form of tessera IR: grammar, syntax tree, parser and canonical printer.

pub mod ast;
pub mod parser;
pub mod printer;
