//! Building the report's figures: pass/fail within a tolerance, informative, failed phase.

use crate::error::NetcheckError;
use crate::report::{Figure, Judgement, fmt_value};

/// The figures of a report, in the order they were measured.
#[derive(Default)]
pub(crate) struct Figures(Vec<Figure>);

impl Figures {
    /// The figures.
    pub(crate) fn into_inner(self) -> Vec<Figure> {
        self.0
    }

    /// `values` is (expected, measured); `verdict` is (tolerance text, judgement).
    pub(crate) fn push(
        &mut self,
        name: &str,
        unit: &str,
        values: (Option<f64>, Option<f64>),
        verdict: (String, Judgement),
        note: impl Into<String>,
    ) {
        let ((expected, measured), (tolerance, judgement)) = (values, verdict);
        self.0.push(Figure {
            name: name.to_string(),
            unit: unit.to_string(),
            expected,
            measured,
            tolerance,
            judgement,
            note: note.into(),
        });
    }

    pub(crate) fn info(
        &mut self,
        name: &str,
        unit: &str,
        expected: Option<f64>,
        measured: Option<f64>,
        note: impl Into<String>,
    ) {
        self.push(
            name,
            unit,
            (expected, measured),
            ("-".to_string(), Judgement::Info),
            note,
        );
    }

    pub(crate) fn within(
        &mut self,
        name: &str,
        unit: &str,
        expected: f64,
        measured: f64,
        tol: f64,
        note: impl Into<String>,
    ) {
        let ok = (measured - expected).abs() <= tol;
        self.push(
            name,
            unit,
            (Some(expected), Some(measured)),
            (format!("+-{}", fmt_value(Some(tol))), pass_if(ok)),
            note,
        );
    }

    pub(crate) fn failed_phase(&mut self, name: &str, error: &NetcheckError) {
        self.push(
            name,
            "-",
            (None, None),
            ("-".to_string(), Judgement::Fail),
            format!("phase failed: {error}"),
        );
    }
}

pub(crate) fn pass_if(ok: bool) -> Judgement {
    if ok { Judgement::Pass } else { Judgement::Fail }
}
