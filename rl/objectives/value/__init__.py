"""``ember.rl.objectives.value``: value estimators. ``functional`` holds them as plain tensor
functions (GAE, TD(0), TD(1), TD(lambda), reward-to-go), each a readable loop and a
vectorised twin; ``GAE``, ``TD0Estimator``, ``TD1Estimator`` and ``TDLambdaEstimator`` wrap
them as keyed modules."""
from . import functional
from .advantages import GAE, TD0Estimator, TD1Estimator, TDLambdaEstimator, ValueEstimatorBase
from .functional import (generalized_advantage_estimate, reward2go, td0_advantage_estimate,
                         td0_return_estimate, td1_advantage_estimate, td1_return_estimate,
                         td_lambda_advantage_estimate, td_lambda_return_estimate,
                         vec_generalized_advantage_estimate, vec_td1_advantage_estimate,
                         vec_td1_return_estimate, vec_td_lambda_advantage_estimate,
                         vec_td_lambda_return_estimate)

TD0 = TD0Estimator
TD1 = TD1Estimator
TDLambda = TDLambdaEstimator

__all__ = ["GAE", "TD0", "TD0Estimator", "TD1", "TD1Estimator", "TDLambda",
           "TDLambdaEstimator", "ValueEstimatorBase", "functional",
           "generalized_advantage_estimate", "reward2go",
           "td0_advantage_estimate", "td0_return_estimate", "td1_advantage_estimate",
           "td1_return_estimate", "td_lambda_advantage_estimate", "td_lambda_return_estimate",
           "vec_generalized_advantage_estimate", "vec_td1_advantage_estimate",
           "vec_td1_return_estimate", "vec_td_lambda_advantage_estimate",
           "vec_td_lambda_return_estimate"]
