"""ember.vision.io: image and video reading and writing."""
