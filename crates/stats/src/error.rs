//! The crate's one error type and the input checks every statistic shares.

/// Why a statistic could not be computed.
///
/// The variants name the input (`what`) but cannot know the sample or configuration it came from:
/// callers add that context.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    /// The input has fewer values than the statistic is defined for.
    #[error("{what}: needs at least {needed} value(s), got {got}")]
    TooFew {
        /// Which input was too short.
        what: &'static str,
        /// The smallest count the statistic accepts.
        needed: usize,
        /// The count it was given.
        got: usize,
    },
    /// A value is NaN or infinite. Such a value usually means a failed or unparsed sample; drop or
    /// fix it before computing statistics.
    #[error("{what}: value at index {index} is {value}, not a finite number")]
    NonFinite {
        /// Which input held the value.
        what: &'static str,
        /// Its position in the input slice.
        index: usize,
        /// The value itself (NaN or ±∞).
        value: f64,
    },
    /// A parameter such as a confidence level, alpha or percentile is outside the range it is
    /// defined on.
    #[error("{name} = {value} is outside {range}")]
    OutOfRange {
        /// The parameter's name.
        name: &'static str,
        /// The value given.
        value: f64,
        /// The accepted range, written out for the message.
        range: &'static str,
    },
    /// Paired inputs (one value per round on each side) have different lengths, so rounds cannot
    /// be matched up.
    #[error("paired values differ in length: {baseline} baseline, {candidate} candidate")]
    LengthMismatch {
        /// Number of baseline values.
        baseline: usize,
        /// Number of candidate values.
        candidate: usize,
    },
    /// A value used as the denominator of a ratio is zero or negative, so the ratio would be
    /// infinite or meaningless.
    #[error("{what}: value at index {index} is {value}; a ratio needs positive reference values")]
    NonPositiveReference {
        /// Which input held the value.
        what: &'static str,
        /// Its position in the input slice.
        index: usize,
        /// The value itself.
        value: f64,
    },
    /// A relative change was asked for against a mean that is zero or negative.
    #[error("{what} is {value}; a relative change needs a positive reference")]
    NonPositiveMean {
        /// Which mean.
        what: &'static str,
        /// Its value.
        value: f64,
    },
}

/// Rejects NaN and infinities up front, so that sorting and arithmetic downstream can assume a
/// total order and finite results.
pub(crate) fn check_finite(what: &'static str, values: &[f64]) -> Result<(), StatsError> {
    match values.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(StatsError::NonFinite {
            what,
            index,
            value: values[index],
        }),
        None => Ok(()),
    }
}

pub(crate) fn check_len(
    what: &'static str,
    values: &[f64],
    needed: usize,
) -> Result<(), StatsError> {
    if values.len() < needed {
        return Err(StatsError::TooFew {
            what,
            needed,
            got: values.len(),
        });
    }
    Ok(())
}

/// Checks that `value` lies strictly between 0 and 1.
pub(crate) fn check_unit_open(name: &'static str, value: f64) -> Result<(), StatsError> {
    if value > 0.0 && value < 1.0 {
        Ok(())
    } else {
        Err(StatsError::OutOfRange {
            name,
            value,
            range: "the open interval (0, 1)",
        })
    }
}

pub(crate) fn check_positive(what: &'static str, values: &[f64]) -> Result<(), StatsError> {
    match values.iter().position(|v| *v <= 0.0) {
        Some(index) => Err(StatsError::NonPositiveReference {
            what,
            index,
            value: values[index],
        }),
        None => Ok(()),
    }
}

/// A sorted copy; callers have already rejected NaN, so `total_cmp` orders like `<`.
pub(crate) fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v
}
