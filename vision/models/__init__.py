"""ember.vision.models: the classification model zoo with the multi-weight API."""
