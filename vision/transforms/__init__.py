"""ember.vision.transforms: image transforms on PIL images and tensors."""
