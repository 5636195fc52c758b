"""ember.vision: models with the multi-weight API, transforms, image/video I/O, datasets."""
