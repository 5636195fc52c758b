"""``ember.rl.objectives.value``: value estimators. ``functional`` holds them as plain tensor
functions (GAE, TD(0), TD(1), TD(lambda), reward-to-go), each a readable loop and a
vectorised twin."""
from . import functional
from .functional import (generalized_advantage_estimate, reward2go, td0_advantage_estimate,
                         td0_return_estimate, td1_advantage_estimate, td1_return_estimate,
                         td_lambda_advantage_estimate, td_lambda_return_estimate,
                         vec_generalized_advantage_estimate, vec_td1_advantage_estimate,
                         vec_td1_return_estimate, vec_td_lambda_advantage_estimate,
                         vec_td_lambda_return_estimate)

__all__ = ["functional", "generalized_advantage_estimate", "reward2go",
           "td0_advantage_estimate", "td0_return_estimate", "td1_advantage_estimate",
           "td1_return_estimate", "td_lambda_advantage_estimate", "td_lambda_return_estimate",
           "vec_generalized_advantage_estimate", "vec_td1_advantage_estimate",
           "vec_td1_return_estimate", "vec_td_lambda_advantage_estimate",
           "vec_td_lambda_return_estimate"]
