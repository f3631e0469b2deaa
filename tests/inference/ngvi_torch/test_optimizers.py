"""efvi's torch optimisers as torch optimisers: resume, schedulers, dtypes, groups, failure, bad input.

Their equality to the numpy optimisers is in ``test_conformance``.
"""

import copy

import pytest

torch = pytest.importorskip("torch")

from efvi.inference import DivergenceError  # noqa: E402
from efvi.inference.ngvi import NonFiniteGradientError  # noqa: E402
from efvi.inference.ngvi.torch import IVON, VOGN, Vadam, Vprop, predict  # noqa: E402

NAMES = ["IVON", "Vadam", "Vprop", "VOGN"]
LR = {"IVON": 0.2, "Vadam": 0.02, "Vprop": 0.01, "VOGN": 0.05}


def _mlp(dtype=torch.float64):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).to(dtype)


def _batch(dtype=torch.float64):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 4, generator=g, dtype=dtype)
    return x, (x[:, :3] * 3).argmax(-1)


def _make(name, model, use_kernels=True, **kwargs):
    kwargs = {"lr": LR[name], "ess": 64.0, **kwargs}
    opt = VOGN(model, **kwargs) if name == "VOGN" else {"IVON": IVON, "Vadam": Vadam, "Vprop": Vprop}[name](
        model.parameters(), **kwargs)
    opt.use_kernels = use_kernels          # False: the tensor operations a GPU runs
    return opt


def _train(model, opt, x, t, n_steps, scale=1.0):
    for _ in range(n_steps):
        if isinstance(opt, VOGN):
            opt.step(x, t)
            continue
        for _ in range(opt.mc_samples):
            opt.zero_grad()
            with opt.sampled_params(train=True):
                (scale * torch.nn.functional.cross_entropy(model(x), t)).backward()
        opt.step()


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_resume_continues_bit_for_bit(name):
    x, t = _batch()
    model = _mlp()
    opt = _make(name, model, mc_samples=2, generator=torch.Generator().manual_seed(5))
    _train(model, opt, x, t, 5)
    saved_model = copy.deepcopy(model.state_dict())
    saved = opt.state_dict()
    _train(model, opt, x, t, 5)
    expected = [p.detach().clone() for p in model.parameters()]

    model2 = _mlp()
    model2.load_state_dict(saved_model)
    opt2 = _make(name, model2, generator=torch.Generator())
    opt2.load_state_dict(saved)
    assert opt2.mc_samples == 2
    _train(model2, opt2, x, t, 5)
    for a, b in zip(expected, model2.parameters()):
        assert torch.equal(a, b)


@pytest.mark.parametrize("use_kernels", [True, False], ids=["compiled", "tensor-ops"])
@pytest.mark.parametrize("name", NAMES)
def test_training_lowers_the_loss_in_float32_and_float64_and_predicts(name, use_kernels):
    for dtype in (torch.float32, torch.float64):
        x, t = _batch(dtype)
        model = _mlp(dtype)
        opt = _make(name, model, use_kernels, generator=torch.Generator().manual_seed(0))
        before = torch.nn.functional.cross_entropy(model(x), t).item()
        _train(model, opt, x, t, 150)
        probs = predict(model, opt, x, n_samples=8, transform=lambda z: z.softmax(-1))
        assert probs.dtype == dtype and probs.shape == (64, 3)
        assert torch.allclose(probs.sum(-1), torch.ones(64, dtype=dtype))
        after = torch.nn.functional.cross_entropy(model(x), t).item()
        assert after < 0.7 * before, (name, dtype, before, after)
        assert all(opt.state[p]["hess"].dtype == dtype for p in model.parameters())


def test_float32_and_float64_agree_in_expectation():
    """The same run in both precisions, same draws (float64 normals, cast): float32 follows float64."""

    class Float64Draws(IVON):
        def _noise(self, bucket):
            return torch.randn(bucket.numel, dtype=torch.float64, generator=self.generator).to(bucket.dtype)

    x, t = _batch()
    runs = []
    for dtype in (torch.float64, torch.float32):
        model = _mlp(dtype)
        opt = Float64Draws(model.parameters(), lr=0.2, ess=64.0, generator=torch.Generator().manual_seed(3))
        _train(model, opt, x.to(dtype), t, 30)
        runs.append(torch.cat([p.detach().reshape(-1).double() for p in model.parameters()]))
    assert torch.allclose(runs[0], runs[1], rtol=0, atol=1e-4)


@pytest.mark.parametrize("name", NAMES)
def test_a_scheduler_sets_the_learning_rate(name):
    x, t = _batch()
    model = _mlp()
    opt = _make(name, model, lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    for _ in range(4):
        _train(model, opt, x, t, 1)
        sched.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.025)


def test_groups_have_their_own_learning_rates_and_frozen_parameters_stay():
    x, t = _batch()
    model = _mlp()
    first, last = model[0], model[2]
    opt = IVON([{"params": first.parameters(), "lr": 0.0 + 1e-12}, {"params": last.parameters(), "lr": 0.3}],
               ess=64.0)
    frozen = [p.detach().clone() for p in first.parameters()]
    last.bias.requires_grad_(False)
    bias = last.bias.detach().clone()
    _train(model, opt, x, t, 10)
    assert all(torch.allclose(a, p, atol=1e-9) for a, p in zip(frozen, first.parameters()))
    assert torch.equal(bias, last.bias)                       # no gradient: left as it was
    assert not torch.allclose(last.weight, _mlp()[2].weight)


def test_moving_the_model_after_construction_is_followed():
    x, t = _batch()
    model = _mlp()
    opt = _make("IVON", model)
    _train(model, opt, x, t, 2)
    model.to(torch.float32)
    _train(model, opt, x.float(), t, 3)
    assert all(opt.state[p]["hess"].dtype == torch.float32 for p in model.parameters())
    assert all(opt.state[p]["step"] == 5 for p in model.parameters())


@pytest.mark.parametrize("use_kernels", [True, False], ids=["compiled", "tensor-ops"])
@pytest.mark.parametrize("name", NAMES)
def test_non_finite_gradient_is_named_and_nothing_changes(name, use_kernels):
    x, t = _batch()
    model = _mlp()
    opt = _make(name, model, use_kernels)
    _train(model, opt, x, t, 2)
    before = [p.detach().clone() for p in model.parameters()]
    hess = [opt.state[p]["hess"].clone() for p in model.parameters()]
    bad = x.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(NonFiniteGradientError, match="step 3: the (loss|gradient)") as info:
        if name == "VOGN":
            opt.step(bad, t)
        else:
            opt.step(lambda: _closure(model, opt, bad, t))
    assert info.value.step == 3
    for a, p, h in zip(before, model.parameters(), hess):
        assert torch.equal(a, p) and torch.equal(h, opt.state[p]["hess"])
    _train(model, opt, x, t, 1)                                   # and the run goes on
    assert all(opt.state[p]["step"] == 3 for p in model.parameters())


def _closure(model, opt, x, t):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), t)
    loss.backward()
    return loss


def test_explicit_form_names_a_non_finite_gradient_by_parameter():
    x, t = _batch()
    model = _mlp()
    opt = IVON(model.parameters(), lr=0.1, ess=64.0)
    opt.zero_grad()
    with opt.sampled_params(train=True):
        (torch.nn.functional.cross_entropy(model(x), t) * float("nan")).backward()
    with pytest.raises(NonFiniteGradientError, match=r"step 1: the gradient of parameter 0 of group 0 \(shape"):
        opt.step()


@pytest.mark.parametrize("name, explicit", [(name, False) for name in NAMES] + [("IVON", True)])
def test_a_diverging_run_is_stopped_by_the_shared_rule(name, explicit):
    """Regression on targets in thousands at a step size far too large (the runs of issue 25)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).double()
    x, y = torch.randn(64, 4, dtype=torch.float64), 1e3 * torch.randn(64, 1, dtype=torch.float64)
    opt = VOGN(model, lr=1e3, ess=64.0, loss="mse") if name == "VOGN" else _make(name, model, lr=1e6)

    def closure():
        opt.zero_grad()
        loss = 0.5 * ((model(x) - y) ** 2).sum(1).mean()
        loss.backward()
        return loss

    with pytest.raises(DivergenceError, match=f"step [0-9]+: {name} diverged: the (loss|parameter norm)") as info:
        for _ in range(300):
            before = [p.detach().clone() for p in model.parameters()]
            if name == "VOGN":
                opt.step(x, y)
            elif explicit:                               # no loss seen: the parameter norm stops it
                with opt.sampled_params(train=True):
                    closure()
                opt.step()
            else:
                opt.step(closure)
    assert info.value.what == ("parameter norm" if explicit else info.value.what)
    assert all(torch.equal(a, p) for a, p in zip(before, model.parameters()))
    assert all(opt.state[p]["step"] == info.value.step - 1 for p in model.parameters())


@pytest.mark.parametrize("kwargs, match", [
    (dict(lr=float("nan")), "lr must be"), (dict(lr=-1.0), "lr must be"), (dict(ess=0.0), "ess must be"),
    (dict(ess=None), "ess must be given"), (dict(betas=(0.9, 1.0)), "beta2 must be"),
    (dict(betas=(0.9,)), "betas must be"), (dict(hess_init=-1.0), "hess_init must be"),
    (dict(mc_samples=0), "mc_samples must be"), (dict(prior_precision=0.0), "prior_precision must be"),
    (dict(prior_mean=float("inf")), "prior_mean must be"), (dict(clip_radius=0.0), "clip_radius must be"),
    (dict(prior_precision=[torch.ones(2)]), "prior_precision must be"),
])
def test_bad_hyperparameters_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        IVON(_mlp().parameters(), **{"lr": 0.1, "ess": 10.0, **kwargs})


@pytest.mark.parametrize("name, kwargs, match", [
    ("Vprop", dict(beta=1.0), "beta must be"), ("Vadam", dict(betas=(1.0, 0.9)), "beta1 must be"),
    ("VOGN", dict(loss="hinge"), "loss must be"), ("VOGN", dict(curvature="hessian"), "curvature must be"),
    ("VOGN", dict(chunk_size=0), "chunk_size must be"),
    ("VOGN", dict(loss=lambda f, y: f.sum(1), curvature="gauss_newton"), "needs a named loss"),
])
def test_bad_arguments_of_each_optimiser_are_named(name, kwargs, match):
    with pytest.raises(ValueError, match=match):
        _make(name, _mlp(), **kwargs)


def test_misuse_is_refused_by_name():
    model = _mlp()
    opt = IVON(model.parameters(), lr=0.1, ess=10.0)
    with pytest.raises(RuntimeError, match="at least one sample"):
        opt.step()
    with pytest.raises(TypeError, match="float32 or float64"):
        IVON(_mlp().to(torch.bfloat16).parameters(), lr=0.1, ess=10.0)
    with pytest.raises(ValueError, match="'efvi' entry"):
        opt.load_state_dict(torch.optim.SGD(model.parameters(), lr=0.1).state_dict())
    x, t = _batch()
    _train(model, opt, x, t, 1)
    with pytest.raises(ValueError, match="one of 'IVON'"):
        Vadam(_mlp().parameters(), ess=10.0).load_state_dict(opt.state_dict())
    small = torch.nn.Linear(4, 2).double()
    with pytest.raises(ValueError, match="parameters"):
        IVON(small.parameters(), ess=10.0).load_state_dict(opt.state_dict())
    vogn = VOGN(_mlp(), ess=10.0)
    with pytest.raises(TypeError, match="opt.step\\(inputs, targets\\)"):
        with vogn.sampled_params(train=True):
            pass
    with pytest.raises(ValueError, match="same positive number"):
        vogn.step(x, t[:3])
    with pytest.raises(TypeError, match="torch.nn.Module"):
        VOGN(list(_mlp().parameters()), ess=10.0)
    emb = torch.nn.Embedding(5, 2, sparse=True).double()
    sparse = IVON(emb.parameters(), ess=10.0)
    with pytest.raises(RuntimeError, match="sparse gradients"):
        with sparse.sampled_params(train=True):
            emb(torch.tensor([1, 2])).sum().backward()
    with pytest.raises(RuntimeError, match="cannot be nested"):
        with opt.sampled_params():
            with opt.sampled_params():
                pass


def test_as_prior_gives_the_posterior_as_the_next_tasks_prior():
    x, t = _batch()
    model = _mlp()
    opt = IVON(model.parameters(), lr=0.1, ess=64.0)
    _train(model, opt, x, t, 3)
    groups = opt.as_prior()
    nxt = IVON(groups, lr=0.1, ess=64.0)
    for p, mean, precision in zip(model.parameters(), groups[0]["prior_mean"], groups[0]["prior_precision"]):
        assert torch.equal(mean, p.detach())
        assert torch.allclose(precision, 64.0 * opt.state[p]["hess"] + 1.0)
    assert nxt.param_groups[0]["prior_mean"][0].shape == model[0].weight.shape


def test_a_group_added_later_trains_with_its_own_settings():
    x, t = _batch()
    model = _mlp()
    opt = IVON(model[0].parameters(), lr=0.2, ess=64.0)
    opt.add_param_group({"params": model[2].parameters(), "lr": 0.1, "prior_precision": 5.0})
    assert opt.param_groups[1]["prior_precision"] == 5.0 and opt.param_groups[1]["betas"] == (0.9, 0.99999)
    before = torch.nn.functional.cross_entropy(model(x), t).item()
    _train(model, opt, x, t, 50)
    assert torch.nn.functional.cross_entropy(model(x), t).item() < before
    assert all(opt.state[p]["step"] == 50 for p in model.parameters())
    with pytest.raises(ValueError, match="lr must be"):
        opt.add_param_group({"params": [torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))], "lr": -1.0})
    assert len(opt.param_groups) == 2                      # the refused group is not kept
    _train(model, opt, x, t, 1)
