"""ember.rl: TensorDict, environments, collectors, replay buffers and RL losses."""
