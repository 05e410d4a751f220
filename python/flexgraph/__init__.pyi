from ._api import Dataset as Dataset
from ._api import Error as Error
from ._api import InvalidArgumentError as InvalidArgumentError
from ._api import Model as Model
from ._api import Recommendations as Recommendations
from ._api import Run as Run
from ._api import load_model as load_model
from ._api import models as models
from ._api import train as train

__version__: str
__all__: list[str]
