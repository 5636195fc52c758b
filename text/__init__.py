"""ember.text: tokenizers, vocab, transforms, encoders/decoders, datasets."""
