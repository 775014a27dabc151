//! "Did you mean ...?": the closest known names to a misspelled one.

/// Edit distance between `a` and `b` in characters: insertions, deletions, substitutions and
/// transpositions of neighbours (`axsi` is one edit from `axis`).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // Three rows of the optimal-string-alignment table.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        current[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            current[j] = (previous[j - 1] + cost)
                .min(previous[j] + 1)
                .min(current[j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                current[j] = current[j].min(before[j - 2] + 1);
            }
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
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
        assert_eq!(edit_distance("relu", "reul"), 1);
        assert_eq!(edit_distance("axsi", "axis"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(
            did_you_mean("t.rleu", ["t.relu", "t.dense"]),
            "; did you mean 't.relu'?"
        );
        assert_eq!(did_you_mean("zzz", ["t.relu"]), "");
    }
}
