"""ember.audio: streaming audio I/O, DSP transforms, ASR models and pipelines."""
