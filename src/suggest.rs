//! "Did you mean ...?": the closest known names to a misspelled one.

/// Levenshtein distance between `a` and `b`, in characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

/// The candidates within a third of `name`'s length (at least 1, at most 3 edits), closest
/// first.
pub fn close_matches<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Vec<&'a str> {
    let limit = (name.chars().count() / 3).clamp(1, 3);
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .map(|c| (edit_distance(name, c), c))
        .filter(|&(d, _)| d <= limit)
        .collect();
    scored.sort();
    scored.into_iter().map(|(_, c)| c).collect()
}

/// `; did you mean 'a'?` or `; did you mean 'a' or 'b'?`, or nothing.
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    let matches = close_matches(name, candidates);
    match matches.as_slice() {
        [] => String::new(),
        [one] => format!("; did you mean '{one}'?"),
        [first, second, ..] => format!("; did you mean '{first}' or '{second}'?"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names() {
        assert_eq!(edit_distance("relu", "reul"), 2);
        assert_eq!(
            did_you_mean("t.rleu", ["t.relu", "t.dense"]),
            "; did you mean 't.relu'?"
        );
        assert_eq!(did_you_mean("zzz", ["t.relu"]), "");
    }
}
