//! A link's `loss`: Bernoulli or Gilbert–Elliott random loss.

use super::values::join;
use super::{Reader, R};
use crate::link::LossModel;
use toml::Value;

impl Reader<'_> {
    /// `loss = 0.01` (Bernoulli), `{ model = "bernoulli", p = 0.01 }`, or
    /// `{ model = "gilbert-elliott", good_to_bad, bad_to_good, loss_good = 0, loss_bad = 1 }`.
    pub(super) fn loss_model(&self, v: &Value, path: &str) -> R<LossModel> {
        let Value::Table(t) = v else {
            let p = self.probability(path, v)?;
            return Ok(if p > 0.0 {
                LossModel::Bernoulli(p)
            } else {
                LossModel::None
            });
        };
        let model = match t.get("model") {
            Some(m) => self.string(&join(path, "model"), m)?,
            None => {
                return Err(self.missing(
                    &join(path, "model"),
                    "give model = \"bernoulli\" or \"gilbert-elliott\"",
                ))
            }
        };
        let prob = |k: &str, default: Option<f64>| -> R<f64> {
            match (t.get(k), default) {
                (Some(x), _) => self.probability(&join(path, k), x),
                (None, Some(d)) => Ok(d),
                (None, None) => {
                    Err(self.missing(&join(path, k), "give a probability between 0 and 1"))
                }
            }
        };
        match model {
            "bernoulli" => {
                self.check_keys(t, path, &["model", "p"])?;
                let p = prob("p", None)?;
                Ok(if p > 0.0 {
                    LossModel::Bernoulli(p)
                } else {
                    LossModel::None
                })
            }
            "gilbert-elliott" => {
                self.check_keys(
                    t,
                    path,
                    &[
                        "model",
                        "good_to_bad",
                        "bad_to_good",
                        "loss_good",
                        "loss_bad",
                    ],
                )?;
                let m = LossModel::GilbertElliott {
                    good_to_bad: prob("good_to_bad", None)?,
                    bad_to_good: prob("bad_to_good", None)?,
                    loss_good: prob("loss_good", Some(0.0))?,
                    loss_bad: prob("loss_bad", Some(1.0))?,
                };
                if let LossModel::GilbertElliott {
                    good_to_bad,
                    bad_to_good,
                    ..
                } = m
                {
                    if good_to_bad + bad_to_good == 0.0 {
                        return Err(self.invalid(
                            &join(path, "bad_to_good"),
                            t.get("bad_to_good").unwrap_or(v),
                            "good_to_bad and bad_to_good cannot both be 0",
                        ));
                    }
                }
                Ok(m)
            }
            _ => Err(self.invalid(
                &join(path, "model"),
                t.get("model").unwrap_or(v),
                "allowed: \"bernoulli\", \"gilbert-elliott\"",
            )),
        }
    }
}
