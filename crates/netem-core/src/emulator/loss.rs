//! Loss generators exactly as `sch_netem.c` runs them, on 32-bit random numbers.

use rand::RngCore;

use crate::profile::LossModel;

/// tc's `set_percent()`: a fraction scaled to the full u32 range, rounded to nearest even.
fn threshold(fraction: f64) -> u32 {
    (fraction.clamp(0.0, 1.0) * u32::MAX as f64).round_ties_even() as u32
}

/// Which Gilbert-Elliott state the chain is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeState {
    /// Good state (netem starts here).
    Good,
    /// Bad state.
    Bad,
}

/// Loss state machine for one direction.
#[derive(Debug, Clone)]
pub enum LossState {
    /// Never loses.
    None,
    /// `loss random`: lost when `threshold != 0 && threshold >= rnd`.
    Random {
        /// netem's `q->loss`.
        threshold: u32,
    },
    /// `loss gemodel`, with netem's `a1..a4` thresholds.
    GilbertElliott {
        /// Good to bad (p).
        a1: u32,
        /// Bad to good (r).
        a2: u32,
        /// Kernel's `h`: a packet in the bad state is lost when `rnd > a3`.
        a3: u32,
        /// Good-state loss (1-k): lost when `rnd < a4`.
        a4: u32,
        /// Current state.
        state: GeState,
    },
}

impl LossState {
    /// Translates a model the way tc does before handing it to the kernel.
    pub fn new(model: &LossModel) -> Self {
        match *model {
            LossModel::None => LossState::None,
            LossModel::Random { probability } => LossState::Random {
                threshold: threshold(probability),
            },
            LossModel::GilbertElliott {
                p,
                r,
                one_minus_h,
                one_minus_k,
            } => LossState::GilbertElliott {
                a1: threshold(p),
                a2: threshold(r),
                // tc: "netem option is 1-h but kernel expects h".
                a3: u32::MAX - threshold(one_minus_h),
                a4: threshold(one_minus_k),
                state: GeState::Good,
            },
        }
    }

    /// Decides whether the next packet is lost (netem's `loss_event()`).
    pub fn lose(&mut self, rng: &mut impl RngCore) -> bool {
        match self {
            LossState::None => false,
            LossState::Random { threshold } => {
                // Short-circuits like netem: a zero threshold draws nothing.
                *threshold != 0 && *threshold >= rng.next_u32()
            }
            LossState::GilbertElliott {
                a1,
                a2,
                a3,
                a4,
                state,
            } => match *state {
                // The loss uses the state before the transition, as loss_gilb_ell() does.
                GeState::Good => {
                    if rng.next_u32() < *a1 {
                        *state = GeState::Bad;
                    }
                    rng.next_u32() < *a4
                }
                GeState::Bad => {
                    if rng.next_u32() < *a2 {
                        *state = GeState::Good;
                    }
                    rng.next_u32() > *a3
                }
            },
        }
    }

    /// The Gilbert-Elliott state, `None` for other models.
    pub fn ge_state(&self) -> Option<GeState> {
        match self {
            LossState::GilbertElliott { state, .. } => Some(*state),
            _ => None,
        }
    }
}
