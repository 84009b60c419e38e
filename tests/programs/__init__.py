"""Small user programs in the style of autograd's examples (issue 13, part 3).

Each module exposes `make_args(rng)` (the arguments of `objective`, small sizes),
`objective(*args)` (a scalar) and `fit(steps)` (plain-numpy gradient steps with tp.grad,
returning `(initial, final)` objective values). Modules whose objective draws random
numbers also expose `fresh(args)`: the same arguments with the random source reset, so
that two evaluations draw the same numbers.
"""
PROGRAMS = ["gaussian_process", "rnn", "lstm", "bbvi", "bayesian_nn", "hmm_em", "vae",
            "fluidsim", "ode_net", "convnet", "negative_binomial", "logistic_regression",
            "model_object", "model_object_methods", "gmm"]
