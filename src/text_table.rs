//! Column-aligned text tables, as `kubectl get` prints them: a header row, then one row per
//! item, columns separated by two spaces, trailing spaces trimmed. Shared by the CLI and the
//! cluster shell's command box.

/// Aligns `rows` (the first one being the header) into columns.
pub fn render(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|col| {
            rows.iter()
                .filter_map(|r| r.get(col))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    rows.iter()
        .map(|row| {
            row.iter()
                .zip(&widths)
                .map(|(cell, width)| format!("{cell:<width$}"))
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_aligned_and_trailing_spaces_trimmed() {
        let rows = vec![
            vec![
                "NAME".to_string(),
                "PHASE".to_string(),
                "MESSAGE".to_string(),
            ],
            vec!["a-long-name".to_string(), "Held".to_string(), String::new()],
            vec!["b".to_string(), "Synced".to_string(), "ok".to_string()],
        ];
        assert_eq!(
            render(&rows),
            "NAME         PHASE   MESSAGE\na-long-name  Held\nb            Synced  ok"
        );
    }
}
