import os
import sys

# The extension module is built into build/python/cubestream by the CMake build; tests run
# against that tree unless cubestream is already importable (an installed wheel).
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD_PY = os.path.join(ROOT, "build", "python")
if os.path.isdir(BUILD_PY) and BUILD_PY not in sys.path:
    sys.path.insert(0, BUILD_PY)
