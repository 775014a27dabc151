//! The progress bar of tessera-bench and tessera-tune: one line on stderr, redrawn per step,
//! only when stderr is a terminal.

use std::io::{IsTerminal, Write};

/// A one-line progress bar on a terminal (nothing otherwise).
pub struct Progress<'w> {
    err: &'w mut dyn Write,
    total: usize,
    done: usize,
    shown: bool,
}

impl<'w> Progress<'w> {
    /// A bar of `total` steps drawn on `err`.
    pub fn new(err: &'w mut dyn Write, total: usize) -> Progress<'w> {
        let shown = std::io::stderr().is_terminal();
        Progress {
            err,
            total,
            done: 0,
            shown,
        }
    }

    /// Shows that step `what` starts.
    pub fn step(&mut self, what: &str) {
        if self.shown {
            let width = 30;
            let filled = width * self.done / self.total.max(1);
            let _ = write!(
                self.err,
                "\r\x1b[2K[{}{}] {}/{} {what}",
                "#".repeat(filled),
                " ".repeat(width - filled),
                self.done,
                self.total
            );
            let _ = self.err.flush();
        }
        self.done += 1;
    }

    /// Shows `what` with the bar at `done` of its steps (a bar measured in something other
    /// than steps, such as seconds of a budget).
    pub fn show(&mut self, done: usize, what: &str) {
        self.done = done.min(self.total);
        self.step(what);
    }

    /// Writes `text` as a line of its own above the bar.
    pub fn line(&mut self, text: &str) {
        if self.shown {
            let _ = write!(self.err, "\r\x1b[2K");
        }
        let _ = writeln!(self.err, "{text}");
    }

    /// Clears the bar.
    pub fn finish(&mut self) {
        if self.shown {
            let _ = write!(self.err, "\r\x1b[2K");
            let _ = self.err.flush();
        }
    }
}
