"""CUDA inside Python files: the kernel strings a module hands to CuPy, PyCUDA or torch.

From the text of a .py file, read with :mod:`ast` (project code is never run), this
package finds the calls that compile CUDA, works out the text of their code argument
(literals, names, concatenation, ``textwrap.dedent``, ``.format`` / ``%`` / f-strings)
with a character-exact map back to the file, and the launches of what it found. Each
kernel becomes one unit the rules read like a .cu file (the engine builds them; fixes
go back through the map). The call's options reach the nvcc flag rules (CL401-CL404,
through project.buildflags) and ptxas (CL301-CL303); its launches give the block shape
(model.launch_shape) and CL303 its launch configuration.

extract.py holds the entry, units.py the types other layers read, calls.py the compile
calls and their arguments, resolve.py the values of string expressions, mapping.py the
mapped strings and the literal scanner, launches.py the launches; modules.py and
imports.py what comes from the project's other modules, files.py the files a module
reads, readers.py those files linted at their own positions.
"""
