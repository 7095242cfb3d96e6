"""Let torchvision's PyPI wheel import next to a CPU-only torch.

PyPI's Linux torchvision wheels are CUDA builds: with the CPU torch this project pins
(torch==2.13.0+cpu) their C++ ops library cannot load (it links libc10_cuda.so), and
``import torchvision`` then fails while registering meta kernels for those missing ops
("operator torchvision::nms does not exist"). The pure-Python parts LeRobot's policies use
(models, IntermediateLayerGetter, FrozenBatchNorm2d) need none of them.

``scripts/setup.sh`` installs this module with a ``.pth`` line that imports it at start-up.
It changes nothing when the ops load (a matching CPU or CUDA torchvision); otherwise it
imports an empty ``torchvision._meta_registrations`` instead, so calling an op still raises
torchvision's own "Couldn't load custom C++ ops" error.
"""
import importlib.abc
import importlib.machinery
import sys
import types

_SKIPPED = "torchvision._meta_registrations"


class _SkipMetaRegistrationsWithoutOps(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname != _SKIPPED:
            return None
        extension = sys.modules.get("torchvision.extension")  # imported just before
        if extension is None or extension._has_ops():
            return None  # the ops loaded: the normal import
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        return types.ModuleType(spec.name, "skipped: torchvision's C++ ops are not loadable")

    def exec_module(self, module):
        pass


if not any(isinstance(f, _SkipMetaRegistrationsWithoutOps) for f in sys.meta_path):
    sys.meta_path.insert(0, _SkipMetaRegistrationsWithoutOps())
