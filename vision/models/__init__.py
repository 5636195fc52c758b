"""ember.vision.models: the classification model zoo with the multi-weight API.

Every builder (``resnet50``, ``vit_b_16``, ...) takes keyword arguments only and has a weights
enum (``ResNet50_Weights``, ...) with torchvision's published entries; state-dict keys equal
torchvision's, so its ``.pth`` checkpoints load as they are.

    >>> from ember.vision import models
    >>> models.get_model_weights("resnet50").DEFAULT
    ResNet50_Weights.IMAGENET1K_V2
    >>> len(models.list_models(include="resnet*")), len(models.list_models())
    (5, 80)
"""
from ._api import (Weights, WeightsEnum, get_model, get_model_builder,  # noqa: F401
                   get_model_weights, get_weight, list_models, register_model)
from .resnet import *  # noqa: F401,F403
from .mobilenetv2 import *  # noqa: F401,F403
from .mobilenetv3 import *  # noqa: F401,F403
from .vgg import *  # noqa: F401,F403
from .alexnet import *  # noqa: F401,F403
from .squeezenet import *  # noqa: F401,F403
from .efficientnet import *  # noqa: F401,F403
from .regnet import *  # noqa: F401,F403
from .convnext import *  # noqa: F401,F403
from .vision_transformer import *  # noqa: F401,F403
from .shufflenetv2 import *  # noqa: F401,F403
from .densenet import *  # noqa: F401,F403
from .mnasnet import *  # noqa: F401,F403
from .googlenet import *  # noqa: F401,F403
from .inception import *  # noqa: F401,F403
from .swin_transformer import *  # noqa: F401,F403
from .maxvit import *  # noqa: F401,F403
from .digits import *  # noqa: F401,F403

__all__ = [
    "Weights", "WeightsEnum", "register_model", "list_models", "get_model_builder", "get_model",
    "get_model_weights", "get_weight", "ResNet", "BasicBlock", "Bottleneck", "resnet18",
    "resnet34", "resnet50", "resnet101", "resnet152", "resnext50_32x4d", "resnext101_32x8d",
    "resnext101_64x4d", "wide_resnet50_2", "wide_resnet101_2", "ResNet18_Weights",
    "ResNet34_Weights", "ResNet50_Weights", "ResNet101_Weights", "ResNet152_Weights",
    "ResNeXt50_32X4D_Weights", "ResNeXt101_32X8D_Weights", "ResNeXt101_64X4D_Weights",
    "Wide_ResNet50_2_Weights", "Wide_ResNet101_2_Weights", "MobileNetV2", "InvertedResidual",
    "mobilenet_v2", "MobileNet_V2_Weights", "MobileNetV3", "InvertedResidualConfig",
    "mobilenet_v3_large", "mobilenet_v3_small", "MobileNet_V3_Large_Weights",
    "MobileNet_V3_Small_Weights", "VGG", "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16",
    "vgg16_bn", "vgg19", "vgg19_bn", "VGG11_Weights", "VGG11_BN_Weights", "VGG13_Weights",
    "VGG13_BN_Weights", "VGG16_Weights", "VGG16_BN_Weights", "VGG19_Weights", "VGG19_BN_Weights",
    "AlexNet", "alexnet", "AlexNet_Weights", "SqueezeNet", "Fire", "squeezenet1_0",
    "squeezenet1_1", "SqueezeNet1_0_Weights", "SqueezeNet1_1_Weights", "EfficientNet",
    "MBConvConfig", "FusedMBConvConfig", "MBConv", "FusedMBConv", "efficientnet_b0",
    "efficientnet_b1", "efficientnet_b2", "efficientnet_b3", "efficientnet_b4", "efficientnet_b5",
    "efficientnet_b6", "efficientnet_b7", "efficientnet_v2_s", "efficientnet_v2_m",
    "efficientnet_v2_l", "EfficientNet_B0_Weights", "EfficientNet_B1_Weights",
    "EfficientNet_B2_Weights", "EfficientNet_B3_Weights", "EfficientNet_B4_Weights",
    "EfficientNet_B5_Weights", "EfficientNet_B6_Weights", "EfficientNet_B7_Weights",
    "EfficientNet_V2_S_Weights", "EfficientNet_V2_M_Weights", "EfficientNet_V2_L_Weights",
    "RegNet", "BlockParams", "regnet_y_400mf", "regnet_y_800mf", "regnet_y_1_6gf",
    "regnet_y_3_2gf", "regnet_y_8gf", "regnet_y_16gf", "regnet_y_32gf", "regnet_y_128gf",
    "regnet_x_400mf", "regnet_x_800mf", "regnet_x_1_6gf", "regnet_x_3_2gf", "regnet_x_8gf",
    "regnet_x_16gf", "regnet_x_32gf", "RegNet_Y_400MF_Weights", "RegNet_Y_800MF_Weights",
    "RegNet_Y_1_6GF_Weights", "RegNet_Y_3_2GF_Weights", "RegNet_Y_8GF_Weights",
    "RegNet_Y_16GF_Weights", "RegNet_Y_32GF_Weights", "RegNet_Y_128GF_Weights",
    "RegNet_X_400MF_Weights", "RegNet_X_800MF_Weights", "RegNet_X_1_6GF_Weights",
    "RegNet_X_3_2GF_Weights", "RegNet_X_8GF_Weights", "RegNet_X_16GF_Weights",
    "RegNet_X_32GF_Weights", "ConvNeXt", "CNBlockConfig", "LayerNorm2d", "convnext_tiny",
    "convnext_small", "convnext_base", "convnext_large", "ConvNeXt_Tiny_Weights",
    "ConvNeXt_Small_Weights", "ConvNeXt_Base_Weights", "ConvNeXt_Large_Weights",
    "VisionTransformer", "vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32", "vit_h_14",
    "ViT_B_16_Weights", "ViT_B_32_Weights", "ViT_L_16_Weights", "ViT_L_32_Weights",
    "ViT_H_14_Weights", "ShuffleNetV2", "shufflenet_v2_x0_5", "shufflenet_v2_x1_0",
    "shufflenet_v2_x1_5", "shufflenet_v2_x2_0", "ShuffleNet_V2_X0_5_Weights",
    "ShuffleNet_V2_X1_0_Weights", "ShuffleNet_V2_X1_5_Weights", "ShuffleNet_V2_X2_0_Weights",
    "DenseNet", "densenet121", "densenet161", "densenet169", "densenet201", "DenseNet121_Weights",
    "DenseNet161_Weights", "DenseNet169_Weights", "DenseNet201_Weights", "MNASNet", "mnasnet0_5",
    "mnasnet0_75", "mnasnet1_0", "mnasnet1_3", "MNASNet0_5_Weights", "MNASNet0_75_Weights",
    "MNASNet1_0_Weights", "MNASNet1_3_Weights", "GoogLeNet", "GoogLeNetOutputs", "googlenet",
    "GoogLeNet_Weights", "Inception3", "InceptionOutputs", "inception_v3", "Inception_V3_Weights",
    "SwinTransformer", "swin_t", "swin_s", "swin_b", "swin_v2_t", "swin_v2_s", "swin_v2_b",
    "Swin_T_Weights", "Swin_S_Weights", "Swin_B_Weights", "Swin_V2_T_Weights", "Swin_V2_S_Weights",
    "Swin_V2_B_Weights", "MaxVit", "maxvit_t", "MaxVit_T_Weights",
]

from . import digits as _digits  # noqa: E402 (ember-trained models)

__all__ += _digits.__all__
