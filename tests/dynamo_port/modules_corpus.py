"""Cases ported from pytorch/pytorch ``test/dynamo/test_modules.py`` (``NNModuleTests``): the
small modules those tests define (submodules, containers, attribute precedence, training
flag, members that are functions, forwards calling helpers), re-typed and adapted; each case
calls a module built once, as the tests' ``run_and_check`` does."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from . import case_registrar

case = case_registrar("test/dynamo/test_modules.py")


class BasicModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1 = torch.nn.Linear(10, 10)
        self.scale = torch.randn(1, 10)

    def forward(self, x):
        return F.relu(self.linear1(x)) * self.scale


class FnMember(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1 = torch.nn.Linear(10, 10)
        self.activation = F.relu

    def forward(self, x):
        x = self.linear1(x)
        if self.activation:
            x = self.activation(x)
        return x


class SubmoduleExample(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = BasicModule()
        self.layer2 = BasicModule()
        self.scale = torch.randn(1, 10)

    def forward(self, x):
        x = self.layer1(x)
        x = self.layer2(x)
        return x * self.scale


class IsTrainingCheck(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1 = torch.nn.Linear(10, 10)
        self.linear2 = torch.nn.Linear(10, 10)
        self.train(True)

    def forward(self, x):
        if self.training:
            mod = self.linear1
        else:
            mod = self.linear2
        return F.relu(mod(x))


class ModuleAttributePrecedenceBase(torch.nn.Module):
    def linear(self, x, flag=None):
        if flag:
            return x * 2.0
        return x * 3.0


class ModuleAttributePrecedence(ModuleAttributePrecedenceBase):
    def __init__(self):
        super().__init__()
        self.activation = torch.nn.ReLU()
        self.linear = torch.nn.Linear(10, 10)  # a submodule; the class's method wins
        self.initializer = torch.ones([10, 10])
        self.scale = 0.5

    def activation(self, x):  # noqa: F811 (the precedence under test)
        return x * 1.2

    def initializer(self):  # noqa: F811
        return torch.zeros([10, 10])

    def scale(self):  # noqa: F811
        return 2.0

    def forward(self, x):
        return self.activation(self.linear(self.initializer + x)) * self.scale


class ModuleListExample(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(10, 10), torch.nn.ReLU(),
                                           torch.nn.Linear(10, 10), torch.nn.ReLU()])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        for layer, val in zip(self.layers, (x, x, x, x)):
            x = layer(x) + val
        return x


class ModuleDictExample(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleDict({"0": torch.nn.Linear(10, 10)})

    def forward(self, x):
        x = self.layers["0"](x)
        for name in self.layers:
            x = self.layers[name](x)
        return x


class ParameterListExample(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.params = torch.nn.ParameterList([torch.nn.Parameter(torch.randn(10))
                                              for _ in range(3)])

    def forward(self, x):
        for p in self.params:
            x = x * p
        return x, len(self.params)


class SuperModule(BasicModule):
    def forward(self, x):
        x = super().forward(x)
        return x + 10.0


class ComposedModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Sequential(torch.nn.Linear(10, 10), torch.nn.ReLU())

    def forward(self, x):
        return self.layer(x) + self.layer[0].bias


class ConstLoop(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1 = torch.nn.Linear(10, 10)
        self.count = 3

    def forward(self, x):
        for i in range(self.count):
            x = torch.sigmoid(self.linear1(x))
        return x


class NamedParametersLoop(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1 = torch.nn.Linear(10, 10)
        self.linear2 = torch.nn.Linear(10, 10)

    def forward(self, x):
        total = x
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                total = total + p
        return total


class IsNoneLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = torch.nn.Linear(10, 10)
        self.layer2 = None
        self.train(True)

    def forward(self, x):
        if self.layer1 is not None:
            x = self.layer1(x)
        if self.layer2 is not None:
            x = self.layer2(x)
        return x


class ModuleForwardHasGraphBreak(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = BasicModule()
        self.layer2 = BasicModule()

    def forward(self, x):
        x = self.layer1(x)
        torch._dynamo.graph_break()
        return self.layer2(x)


class StaticForwardHelper(torch.nn.Module):
    @staticmethod
    def _f(x):
        return x * torch.sigmoid(x)

    def forward(self, x):
        return self._f(x)


def _module_case(name: str, module: torch.nn.Module) -> None:
    def call(x):
        return module(x)

    call.__name__ = call.__qualname__ = name
    case(call)


torch.manual_seed(0)
for _name, _module in [
        ("basic_module", BasicModule()), ("fn_member", FnMember()),
        ("submodule_example", SubmoduleExample()), ("is_training_check", IsTrainingCheck()),
        ("module_attribute_precedence", ModuleAttributePrecedence()),
        ("module_list", ModuleListExample()), ("module_dict", ModuleDictExample()),
        ("parameter_list", ParameterListExample()), ("super_module", SuperModule()),
        ("composed_sequential", ComposedModule()), ("const_loop", ConstLoop()),
        ("named_parameters_loop", NamedParametersLoop()), ("is_none_layer", IsNoneLayer()),
        ("module_forward_graph_break", ModuleForwardHasGraphBreak()),
        ("static_forward_helper", StaticForwardHelper())]:
    _module_case(_name, _module)
