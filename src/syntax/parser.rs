//! Text to syntax tree: the pest grammar driven piece by piece, with recovery after errors.

use crate::diag::Diagnostic;
use crate::source::{SourceFile, Span};
use crate::syntax::ast::*;
use pest::error::InputLocation;
use pest::iterators::Pair;
use pest::Parser as _;
use std::collections::BTreeSet;
use std::ops::Range;

#[derive(pest_derive::Parser)]
#[grammar = "syntax/grammar.pest"]
struct Grammar;

/// Deepest `[` nesting accepted in literals and attribute lists.
pub const MAX_NESTING: usize = 64;

/// Parses `range` of `file` (the whole file, or one `// -----` chunk of it).
///
/// Returns every function that parsed and one diagnostic per syntax error: after an error the
/// parser skips to the next line and goes on, so one typo does not hide the next.
pub fn parse_module(file: &SourceFile, range: Range<usize>) -> (AstModule, Vec<Diagnostic>) {
    pest::set_error_detail(true);
    let mut parser = ModuleParser {
        file,
        end: range.end,
        pos: range.start,
        diags: Vec::new(),
    };
    if let Some(diag) = check_nesting(&file.text()[range.clone()], range.start) {
        return (AstModule::default(), vec![diag]);
    }
    let mut module = AstModule::default();
    while let Some(func) = parser.next_func() {
        module.funcs.extend(func);
    }
    (module, parser.diags)
}

/// Rejects `[` nested deeper than [`MAX_NESTING`] outside comments and strings, before the
/// recursive descent could exhaust the stack.
fn check_nesting(text: &str, base: usize) -> Option<Diagnostic> {
    let mut depth = 0usize;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '/' if chars.peek().map(|&(_, n)| n) == Some('/') => {
                chars.by_ref().find(|&(_, n)| n == '\n');
            }
            '"' => {
                while let Some((_, n)) = chars.next() {
                    match n {
                        '\\' => {
                            chars.next();
                        }
                        '"' | '\n' => break,
                        _ => {}
                    }
                }
            }
            '[' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some(Diagnostic::error(
                        Span::new(base + i, base + i + 1),
                        format!("brackets nested too deeply (more than {MAX_NESTING} levels)"),
                    ));
                }
            }
            ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

struct ModuleParser<'a> {
    file: &'a SourceFile,
    end: usize,
    pos: usize,
    diags: Vec<Diagnostic>,
}

impl<'a> ModuleParser<'a> {
    /// Parses `rule` at the current position; on success moves past it.
    ///
    /// pest's error construction scans from the error to the end of its input, so parsing
    /// against the whole rest of the file would make many errors cost quadratic time. The
    /// parser first sees a window that ends after the second line starting an item (a
    /// statement, `}` or `func`); only when the error falls at the window's end (the window
    /// cut a statement spread over lines) does it retry with the whole rest.
    fn parse(&mut self, rule: Rule) -> Result<Pair<'a, Rule>, Diagnostic> {
        let window = self.window_end();
        let result = match self.parse_until(rule, window) {
            Err(diag) if window < self.end && diag.span.start >= window => {
                self.parse_until(rule, self.end)
            }
            result => result,
        };
        result.map_err(|mut diag| {
            // At the end of the input, point just after the last text, on a line that exists.
            if diag.span.start >= self.end {
                let at = self.file.text()[..self.end].trim_end().len();
                diag.span = Span::new(at, at);
            }
            diag
        })
    }

    fn parse_until(&mut self, rule: Rule, end: usize) -> Result<Pair<'a, Rule>, Diagnostic> {
        let text = &self.file.text()[self.pos..end];
        match Grammar::parse(rule, text) {
            Ok(mut pairs) => {
                let pair = pairs.next().expect("an entry rule yields one pair");
                self.pos += pair.as_span().end();
                Ok(pair)
            }
            Err(error) => Err(syntax_error(
                &error,
                text,
                self.pos,
                rule == Rule::body_item,
            )),
        }
    }

    /// The end of the second line after the current one that starts an item.
    fn window_end(&self) -> usize {
        let text = &self.file.text()[..self.end];
        let mut offset = self.pos;
        let mut items = 0;
        while let Some(newline) = text[offset..].find('\n') {
            offset += newline + 1;
            let line = text[offset..].trim_start_matches([' ', '\t', '\r']);
            if ["%", "return", "}", "func"]
                .iter()
                .any(|start| line.starts_with(start))
            {
                items += 1;
                if items == 2 {
                    return text[offset..]
                        .find('\n')
                        .map_or(self.end, |n| offset + n + 1);
                }
            }
        }
        self.end
    }

    /// True when nothing but whitespace and comments remains.
    fn only_trivia_left(&self) -> bool {
        let rest = &self.file.text()[self.pos..self.end];
        skip_trivia(rest, 0) == rest.len()
    }

    /// The next function; `None` at the end of the input, `Some(None)` after an error.
    fn next_func(&mut self) -> Option<Option<AstFunc>> {
        let base = self.pos;
        let item = match self.parse(Rule::top_item) {
            Ok(item) => item,
            Err(diag) => {
                self.pos = diag.span.start.max(self.pos);
                self.diags.push(diag);
                self.skip_line(true);
                return Some(None);
            }
        };
        let open = item.into_inner().find(|p| p.as_rule() == Rule::func_open)?;
        let mut func = func_header(open, base);
        loop {
            let base = self.pos;
            match self.parse(Rule::body_item) {
                Ok(item) => {
                    let inner = item.into_inner().next().expect("body_item has one child");
                    match inner.as_rule() {
                        Rule::close_brace => {
                            func.close = span(&inner, base);
                            return Some(Some(func));
                        }
                        Rule::return_stmt => func.body.push(AstStmt::Return(ret(inner, base))),
                        _ => func.body.push(AstStmt::Op(op_stmt(inner, base))),
                    }
                }
                Err(diag) => {
                    self.pos = diag.span.start.max(self.pos);
                    self.diags.push(diag);
                    if self.only_trivia_left() || self.skip_line(false) {
                        return Some(Some(func));
                    }
                }
            }
        }
    }

    /// Moves to the start of the next line. Returns true when that line starts a function
    /// (or the input ended), so the caller should leave the current one.
    fn skip_line(&mut self, to_next_func: bool) -> bool {
        let text = self.file.text();
        loop {
            match text[self.pos..self.end].find('\n') {
                Some(i) => self.pos += i + 1,
                None => {
                    self.pos = self.end;
                    return true;
                }
            }
            let line = text[self.pos..self.end].trim_start();
            let starts_func = line.starts_with("func ") || line.starts_with("func@");
            if starts_func || !to_next_func {
                return starts_func;
            }
        }
    }
}

/// Converts a pest error into a diagnostic: what was expected at the farthest position, or an
/// unterminated string before it.
///
/// `in_body` says whether a statement is being parsed: only statements end at a line end.
fn syntax_error(
    error: &pest::error::Error<Rule>,
    text: &str,
    base: usize,
    in_body: bool,
) -> Diagnostic {
    let mut at = match error.location {
        InputLocation::Pos(p) | InputLocation::Span((p, _)) => p,
    };
    let mut expected = BTreeSet::new();
    let mut line_end_expected = false;
    if let Some(attempts) = error.parse_attempts() {
        at = attempts.max_position;
        // A newline is expected wherever whitespace may be; it ends a statement only when
        // `stmt_end` itself was tried here.
        line_end_expected = attempts.call_stacks().iter().any(|stack| {
            stack.parent == Some(Rule::stmt_end)
                || stack.deepest.get_rule() == Some(&Rule::stmt_end)
        });
        for token in attempts.expected_tokens() {
            if let Some(name) = token_name(&token.to_string()) {
                expected.insert(name);
            }
        }
    }
    if let pest::error::ErrorVariant::ParsingError { positives, .. } = &error.variant {
        expected.extend(
            positives
                .iter()
                .filter_map(|r| rule_name(*r))
                .map(String::from),
        );
    }
    if let Some(quote) = unterminated_string(&text[..at.min(text.len())]) {
        let line_end = text[quote..].find('\n').map_or(text.len(), |n| quote + n);
        return Diagnostic::error(
            Span::new(base + quote, base + line_end),
            "unterminated string",
        );
    }
    at = skip_trivia(text, at);
    // Newlines are expected wherever whitespace may be; "end of line" only helps after text
    // on the same line (the statement could end there), and then covers end of input too.
    let line_start = text[..at.min(text.len())].rfind('\n').map_or(0, |n| n + 1);
    // A bracket is named by the construct it opens.
    for (construct, bracket) in [("attributes ({...})", "'{'"), ("list", "'['")] {
        if expected.contains(construct) {
            expected.remove(bracket);
        }
    }
    if !in_body || !line_end_expected || text[line_start..at.min(text.len())].trim().is_empty() {
        expected.remove("end of line");
    } else if expected.contains("end of line") {
        expected.remove("end of input");
    }
    let expected: Vec<String> = expected.into_iter().collect();
    let message = match expected.as_slice() {
        [] => "invalid syntax".to_string(),
        [one] => format!("expected {one}"),
        [init @ .., last] => format!("expected {} or {last}", init.join(", ")),
    };
    let message = match text.get(at..).and_then(|rest| rest.chars().next()) {
        None => format!("{message}, found end of input"),
        Some(c) => format!("{message}, found '{}'", c.escape_debug()),
    };
    Diagnostic::error(Span::new(base + at, base + at + 1), message)
}

/// How an expected literal token reads in a message: punctuation quoted, sigils as the names
/// they start; `None` for words and identifier characters (their rules are named instead).
fn token_name(token: &str) -> Option<String> {
    match token {
        "%" => Some("value name (%name)".into()),
        "@" => Some("function name (@name)".into()),
        "x" | "return" | "func" | "call" => Some(format!("'{token}'")),
        "\n" => Some("end of line".into()),
        t if !t.is_empty()
            && t.chars()
                .all(|c| c.is_ascii_punctuation() && !matches!(c, '-' | '/' | '$' | '.' | '_')) =>
        {
            Some(format!("'{t}'"))
        }
        _ => None,
    }
}

/// The offset of a `"` in `text` whose string runs into the end of its line or of `text`
/// (outside comments).
fn unterminated_string(text: &str) -> Option<usize> {
    let mut chars = text.char_indices().peekable();
    let mut open = None;
    while let Some((i, c)) = chars.next() {
        match (open, c) {
            (None, '/') if chars.peek().map(|&(_, n)| n) == Some('/') => {
                chars.by_ref().find(|&(_, n)| n == '\n');
            }
            (None, '"') => open = Some(i),
            (Some(_), '\\') => {
                chars.next();
            }
            (Some(_), '"') => open = None,
            (Some(quote), '\n') => return Some(quote),
            _ => {}
        }
    }
    // Parsing stopped inside the string.
    open
}

/// The first position at or after `at` that is neither whitespace nor a comment.
fn skip_trivia(text: &str, mut at: usize) -> usize {
    loop {
        let rest = &text[at.min(text.len())..];
        let trimmed = rest.trim_start();
        at += rest.len() - trimmed.len();
        if !trimmed.starts_with("//") {
            return at.min(text.len());
        }
        at += trimmed.find('\n').unwrap_or(trimmed.len());
    }
}

/// How a rule is named in "expected ..." messages; `None` for rules too small to mention.
fn rule_name(rule: Rule) -> Option<&'static str> {
    Some(match rule {
        Rule::func_open | Rule::kw_func => "'func'",
        Rule::close_brace => "'}'",
        Rule::EOI => "end of input",
        Rule::kw_return | Rule::return_stmt => "'return'",
        Rule::op_stmt | Rule::value_list | Rule::value_id => "value name (%name)",
        Rule::symbol => "function name (@name)",
        Rule::op_name | Rule::op_expr => "op name (dialect.op)",
        Rule::kw_call | Rule::call_expr => "'call'",
        Rule::tensor_type | Rule::type_list | Rule::result_types | Rule::paren_types => {
            "tensor type"
        }
        Rule::dim => "dimension",
        Rule::dim_sep => "'x'",
        Rule::stmt_end => "end of line",
        Rule::element_type => "element type",
        Rule::attr_dict => "attributes ({...})",
        Rule::attr_entry | Rule::ident => "identifier",
        Rule::dense => "dense literal",
        Rule::external => "external literal",
        Rule::int => "integer",
        Rule::float => "float",
        Rule::boolean => "boolean",
        Rule::string => "string",
        Rule::attr_list | Rule::dense_list => "list",
        _ => return None,
    })
}

fn span(pair: &Pair<'_, Rule>, base: usize) -> Span {
    let s = pair.as_span();
    Span::new(base + s.start(), base + s.end())
}

fn name(pair: Pair<'_, Rule>, base: usize) -> Name {
    Name {
        text: pair.as_str()[1..].to_string(),
        span: span(&pair, base),
    }
}

fn func_header(pair: Pair<'_, Rule>, base: usize) -> AstFunc {
    let header = span(&pair, base);
    let mut func = AstFunc {
        name: Name {
            text: String::new(),
            span: header,
        },
        params: Vec::new(),
        results: Vec::new(),
        body: Vec::new(),
        close: Span::at(header.end),
        span: header,
    };
    for part in pair.into_inner() {
        match part.as_rule() {
            Rule::symbol => func.name = name(part, base),
            Rule::params => {
                for param in part.into_inner() {
                    let mut it = param.into_inner();
                    let pname = name(it.next().expect("param name"), base);
                    let ty = tensor_type(it.next().expect("param type"), base);
                    func.params.push(AstParam { name: pname, ty });
                }
            }
            Rule::result_types => {
                let inner = part.into_inner().next().expect("result types");
                func.results = match inner.as_rule() {
                    Rule::paren_types => inner.into_inner().map(|t| tensor_type(t, base)).collect(),
                    _ => vec![tensor_type(inner, base)],
                };
            }
            _ => {}
        }
    }
    func
}

fn tensor_type(pair: Pair<'_, Rule>, base: usize) -> AstType {
    let whole = span(&pair, base);
    let mut dims = Vec::new();
    let mut element = (String::new(), whole);
    for part in pair.into_inner() {
        match part.as_rule() {
            Rule::dim => dims.push((part.as_str().to_string(), span(&part, base))),
            Rule::element_type => element = (part.as_str().to_string(), span(&part, base)),
            _ => {}
        }
    }
    AstType {
        dims,
        element,
        span: whole,
    }
}

fn type_list(pair: Pair<'_, Rule>, base: usize) -> Vec<AstType> {
    pair.into_inner().map(|t| tensor_type(t, base)).collect()
}

fn names(pair: Pair<'_, Rule>, base: usize) -> Vec<Name> {
    pair.into_inner().map(|v| name(v, base)).collect()
}

fn ret(pair: Pair<'_, Rule>, base: usize) -> AstReturn {
    let mut stmt = AstReturn {
        values: Vec::new(),
        types: None,
        span: span(&pair, base),
    };
    for part in pair.into_inner() {
        match part.as_rule() {
            Rule::value_list => stmt.values = names(part, base),
            Rule::type_list => stmt.types = Some(type_list(part, base)),
            _ => {}
        }
    }
    stmt
}

fn op_stmt(pair: Pair<'_, Rule>, base: usize) -> AstOp {
    let whole = span(&pair, base);
    let mut results = Vec::new();
    let mut expr = None;
    for part in pair.into_inner() {
        match part.as_rule() {
            Rule::value_list => results = names(part, base),
            _ => expr = Some(part),
        }
    }
    let expr = expr.expect("an op statement has an expression");
    let mut op = AstOp {
        results,
        callee: AstCallee::Op(Name {
            text: String::new(),
            span: whole,
        }),
        args: Vec::new(),
        attrs: Vec::new(),
        types: None,
        span: whole,
    };
    for part in expr.into_inner() {
        match part.as_rule() {
            Rule::op_name => {
                op.callee = AstCallee::Op(Name {
                    text: part.as_str().to_string(),
                    span: span(&part, base),
                })
            }
            Rule::symbol => op.callee = AstCallee::Call(name(part, base)),
            Rule::value_list => {
                op.args = names(part, base).into_iter().map(AstArg::Value).collect()
            }
            Rule::op_args => {
                op.args = part
                    .into_inner()
                    .map(|arg| match arg.as_rule() {
                        Rule::dense => AstArg::Dense(dense(arg, base)),
                        Rule::external => AstArg::External(external(arg, base)),
                        _ => AstArg::Value(name(arg, base)),
                    })
                    .collect()
            }
            Rule::attr_dict => {
                op.attrs = part
                    .into_inner()
                    .map(|entry| {
                        let mut kv = entry.into_inner();
                        let key = kv.next().expect("attribute key");
                        AstAttr {
                            key: Name {
                                text: key.as_str().to_string(),
                                span: span(&key, base),
                            },
                            value: attr_value(kv.next().expect("attribute value"), base),
                        }
                    })
                    .collect()
            }
            Rule::type_list => op.types = Some(type_list(part, base)),
            _ => {}
        }
    }
    op
}

fn scalar(pair: &Pair<'_, Rule>, base: usize) -> Option<AstScalar> {
    let kind = match pair.as_rule() {
        Rule::int => ScalarKind::Int,
        Rule::float => ScalarKind::Float,
        Rule::boolean => ScalarKind::Bool,
        _ => return None,
    };
    Some(AstScalar {
        kind,
        text: pair.as_str().to_string(),
        span: span(pair, base),
    })
}

fn attr_value(pair: Pair<'_, Rule>, base: usize) -> AstAttrValue {
    if let Some(s) = scalar(&pair, base) {
        return AstAttrValue::Scalar(s);
    }
    let whole = span(&pair, base);
    match pair.as_rule() {
        Rule::string => {
            let inner = pair.into_inner().next().map_or("", |p| p.as_str());
            AstAttrValue::Str(unescape(inner), whole)
        }
        _ => AstAttrValue::List(
            pair.into_inner().map(|p| attr_value(p, base)).collect(),
            whole,
        ),
    }
}

fn dense(pair: Pair<'_, Rule>, base: usize) -> AstDense {
    let whole = span(&pair, base);
    let body = literal(pair.into_inner().next().expect("dense body"), base);
    AstDense { body, span: whole }
}

fn external(pair: Pair<'_, Rule>, base: usize) -> AstExternal {
    let whole = span(&pair, base);
    let mut strings = pair.into_inner().map(|string| {
        let at = span(&string, base);
        let inner = string.into_inner().next().map_or("", |p| p.as_str());
        (unescape(inner), at)
    });
    let file = strings.next().expect("external file");
    let key = strings.next().expect("external key");
    AstExternal {
        file,
        key,
        span: whole,
    }
}

fn literal(pair: Pair<'_, Rule>, base: usize) -> AstLiteral {
    match scalar(&pair, base) {
        Some(s) => AstLiteral::Scalar(s),
        None => {
            let whole = span(&pair, base);
            AstLiteral::List(pair.into_inner().map(|p| literal(p, base)).collect(), whole)
        }
    }
}

/// Resolves the escapes the grammar admits (`\" \\ \n \t \u{...}`).
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('u') => {
                let hex: String = chars.by_ref().skip(1).take_while(|&h| h != '}').collect();
                let code = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32);
                out.push(code.unwrap_or(char::REPLACEMENT_CHARACTER));
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (AstModule, Vec<String>) {
        let file = SourceFile::new("t.tsr", text);
        let (module, diags) = parse_module(&file, 0..text.len());
        let rendered = diags.iter().map(|d| d.render(&file)).collect();
        (module, rendered)
    }

    #[test]
    fn parses_the_seed_shape() {
        let (module, diags) = parse(
            "// c\nfunc @f(%x: tensor<4x8xf32>) -> tensor<4xf32> {\n  %y = test.reduce %x {axes = [1]} : tensor<4xf32>\n  return %y : tensor<4xf32>\n}\n",
        );
        assert!(diags.is_empty(), "{diags:?}");
        let func = &module.funcs[0];
        assert_eq!(func.name.text, "f");
        assert_eq!(func.params[0].ty.dims.len(), 2);
        assert_eq!(func.body.len(), 2);
    }

    #[test]
    fn recovers_and_reports_each_bad_line() {
        let (module, diags) = parse(
            "func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %y = test.unary %x :\n  %z = test.unary %x\n  %w = test.unary %x : tensor<4xf32> junk\n  return %x : tensor<4xf32>\n}\n",
        );
        assert_eq!(diags.len(), 2, "{diags:?}");
        assert!(
            diags[0].starts_with("t.tsr:3:3: error: expected tensor type, found '%'"),
            "{diags:?}"
        );
        assert!(
            diags[1].starts_with("t.tsr:4:38: error: expected ',', '}' or end of line, found 'j'"),
            "{diags:?}"
        );
        assert_eq!(module.funcs.len(), 1);
    }

    #[test]
    fn statements_may_span_lines() {
        let (module, diags) = parse(
            "func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %y = test.op %a,\n    %a,\n    %a\n    {k = [1,\n 2]}\n  return %y\n}\n",
        );
        assert!(diags.is_empty(), "{diags:?}");
        let AstStmt::Op(op) = &module.funcs[0].body[0] else {
            panic!("an op")
        };
        assert_eq!((op.args.len(), op.attrs.len()), (3, 1));
    }

    #[test]
    fn unescapes_strings() {
        assert_eq!(unescape(r#"a\"b\\c\n\u{41}"#), "a\"b\\c\nA");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let text = format!(
            "func @f() {{\n %c = test.literal dense<{}",
            "[".repeat(100_000)
        );
        let (_, diags) = parse(&text);
        assert_eq!(diags.len(), 1);
        assert!(diags[0].contains("nested too deeply"), "{diags:?}");
    }
}
